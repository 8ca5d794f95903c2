// Gemini generateContent (Developer API, v1beta).
#include "models/wire_detail.h"

namespace pkb::models::detail {
namespace {

FinishReason gemini_finish(const std::string& raw) {
  if (raw == "STOP") return FinishReason::stop;
  if (raw == "MAX_TOKENS") return FinishReason::length;
  if (raw == "SAFETY" || raw == "RECITATION" || raw == "PROHIBITED_CONTENT" || raw == "BLOCKLIST" || raw == "SPII" ||
      raw == "IMAGE_SAFETY")
    return FinishReason::refused;
  return FinishReason::other;  // LANGUAGE, MALFORMED_FUNCTION_CALL, OTHER, ...
}

class Gemini : public WireFormat {
 public:
  HttpRequest build(const ModelName& name, const std::string& key, const Request& req) const override {
    std::string model = name.model.rfind("models/", 0) == 0 ? name.model.substr(7) : name.model;
    auto content = [](const char* role, const std::string& text) {
      return json{{"role", role}, {"parts", json::array({{{"text", text}}})}};
    };
    json contents = json::array();  // Gemini calls the assistant "model"
    for (const Exchange& e : req.history) {
      contents.push_back(content("user", e.user));
      contents.push_back(content("model", e.assistant));
    }
    contents.push_back(content("user", req.user));
    json body = {{"contents", contents}, {"generationConfig", {{"maxOutputTokens", req.max_output_tokens}}}};
    if (!req.system.empty()) body["systemInstruction"] = {{"parts", json::array({{{"text", req.system}}})}};
    if (req.temperature) body["generationConfig"]["temperature"] = *req.temperature;
    HttpRequest http = make_json_request(name.base_url + "/models/" + model + ":generateContent", std::move(body), req);
    // Header, not ?key=: query strings end up in proxy and server logs.
    if (!key.empty()) http.headers.push_back("x-goog-api-key: " + key);
    return http;
  }

  Verdict parse(const json& j, Reply& r) const override {
    if (j.contains("error"))
      return {ErrorKind::api_error, false, "error in 2xx body: " + clean_text(str(obj(j, "error"), "message")),
              std::nullopt};
    read_usage(j, r);
    r.model_reported = str(j, "modelVersion");
    const json& candidates = arr(j, "candidates");
    if (candidates.empty()) {
      // A blocked prompt is the provider refusing, an answer of its own; a 200 with neither candidates nor a
      // block reason is a broken reply, retried and never cached, like a reply without choices elsewhere.
      std::string block = str(obj(j, "promptFeedback"), "blockReason");
      if (block.empty()) return bad_response("no candidates and no promptFeedback.blockReason in reply");
      r.finish_raw = "blocked:" + block;
      r.finish = FinishReason::refused;
      return {};
    }
    // Thinking models may return MAX_TOKENS with no parts at all: missing parts are normal here.
    for (const auto& part : arr(obj(candidates[0], "content"), "parts")) {
      if (part.is_object() && part.contains("thought") && part["thought"] == true)
        append_para(r.reasoning, str(part, "text"));
      else
        r.text += str(part, "text");
    }
    r.finish_raw = str(candidates[0], "finishReason");
    r.finish = gemini_finish(r.finish_raw);
    return {};
  }

 private:
  static void read_usage(const json& j, Reply& r) {
    if (!j.contains("usageMetadata") || !j["usageMetadata"].is_object()) return;
    const json& u = j["usageMetadata"];
    // candidatesTokenCount excludes thinking, but thinking is billed as output: add it back.
    int64_t thoughts = i64(u, "thoughtsTokenCount");
    r.usage = {true, i64(u, "promptTokenCount"), i64(u, "candidatesTokenCount") + thoughts, thoughts};
  }
};

}  // namespace

std::unique_ptr<WireFormat> make_gemini() { return std::make_unique<Gemini>(); }

}  // namespace pkb::models::detail
