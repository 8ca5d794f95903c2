// Gemini generateContent (Developer API, v1beta).
#include <set>

#include "models/wire_detail.h"

namespace pkb::models::detail {
namespace {

// Ids pkb gives calls the API left without one; never sent back as the API's own.
constexpr const char* kSynthesizedId = "pkb-call-";

// Gemini's function schemas are an OpenAPI subset without additionalProperties: drop it, at every depth.
json gemini_schema(json schema) {
  if (!schema.is_object()) return schema;
  schema.erase("additionalProperties");
  for (auto& [key, value] : schema.items())
    if (value.is_object()) value = gemini_schema(value);
  return schema;
}

// Agent mode: the model's turn as text and functionCall parts (with their thought signatures); results as
// functionResponse parts of a user turn. A user turn that follows a user turn joins it.
void gemini_conversation(const std::vector<Message>& conversation, json& contents) {
  auto user_parts = [&](const json& parts) {
    if (contents.empty() || contents.back()["role"] != "user")
      contents.push_back({{"role", "user"}, {"parts", json::array()}});
    for (const auto& p : parts) contents.back()["parts"].push_back(p);
  };
  for (const Message& m : conversation) {
    if (m.role == Message::Role::user) user_parts(json::array({{{"text", m.text}}}));
    json parts = json::array();
    for (const ToolResult& t : m.tool_results) {
      json response = {{"name", t.name}, {"response", {{t.is_error ? "error" : "content", t.content}}}};
      if (t.call_id.rfind(kSynthesizedId, 0) != 0) response["id"] = t.call_id;
      parts.push_back({{"functionResponse", response}});
    }
    if (m.role == Message::Role::tool) user_parts(parts);
    if (m.role != Message::Role::assistant) continue;
    if (!m.text.empty() || m.tool_calls.empty()) parts.push_back({{"text", m.text}});
    for (const ToolCall& c : m.tool_calls) {
      json call = {{"name", c.name}, {"args", arguments_object(c.arguments)}};
      if (c.id.rfind(kSynthesizedId, 0) != 0) call["id"] = c.id;
      json part = {{"functionCall", call}};
      if (!c.signature.empty()) part["thoughtSignature"] = c.signature;
      parts.push_back(part);
    }
    contents.push_back({{"role", "model"}, {"parts", parts}});
  }
}

// Every documented FinishReason but STOP and MAX_TOKENS is Gemini stopping the answer for a reason of its own
// (OTHER is its "unknown reason"): refused. FINISH_REASON_UNSPECIFIED, none or a new value: other (flagged).
FinishReason gemini_finish(const std::string& raw) {
  static const std::set<std::string> kStoppedByTheProvider = {"SAFETY",
                                                              "RECITATION",
                                                              "LANGUAGE",
                                                              "OTHER",
                                                              "BLOCKLIST",
                                                              "PROHIBITED_CONTENT",
                                                              "SPII",
                                                              "MALFORMED_FUNCTION_CALL",
                                                              "IMAGE_SAFETY",
                                                              "IMAGE_PROHIBITED_CONTENT",
                                                              "IMAGE_RECITATION",
                                                              "IMAGE_OTHER",
                                                              "NO_IMAGE",
                                                              "UNEXPECTED_TOOL_CALL",
                                                              "TOO_MANY_TOOL_CALLS"};
  if (raw == "STOP") return FinishReason::stop;
  if (raw == "MAX_TOKENS") return FinishReason::length;
  if (kStoppedByTheProvider.count(raw)) return FinishReason::refused;
  return FinishReason::other;
}

// streamGenerateContent?alt=sse: every event is a GenerateContentResponse chunk with the next parts; the last
// carries finishReason and the final usageMetadata. No terminal event: the stream ends with the connection.
class GeminiAssembler : public StreamAssembler {
 public:
  AttemptVerdict on_event(const SseEvent& e) override {
    json j;
    if (AttemptVerdict bad; !parse_event(e, j, bad)) return bad;
    if (j.contains("error")) return stream_error_verdict(e.data);
    if (j.contains("usageMetadata") && j["usageMetadata"].is_object()) usage_ = j["usageMetadata"];
    if (std::string v = str(j, "modelVersion"); !v.empty()) model_ = v;
    if (!str(obj(j, "promptFeedback"), "blockReason").empty()) feedback_ = j["promptFeedback"];
    const json& candidates = arr(j, "candidates");
    if (candidates.empty()) return {};
    any_candidate_ = true;
    for (const auto& part : arr(obj(candidates[0], "content"), "parts")) {
      if (part.is_object() && part.contains("functionCall")) parts_.push_back(part);  // calls arrive whole
      if (!part.is_object() || !part.contains("text")) continue;
      bool thought = part.contains("thought") && part["thought"] == true;
      // One part split over chunks is one part again (parse() puts a blank line between thought parts).
      if (!parts_.empty() && parts_.back().contains("text") && (parts_.back().value("thought", false) == thought))
        parts_.back()["text"] = str(parts_.back(), "text") + str(part, "text");
      else
        parts_.push_back(thought ? json{{"text", str(part, "text")}, {"thought", true}}
                                 : json{{"text", str(part, "text")}});
    }
    if (std::string f = str(candidates[0], "finishReason"); !f.empty()) finish_ = f;
    return {};
  }
  bool finished() const override { return false; }
  bool complete() const override { return !finish_.empty() || !feedback_.is_null(); }
  json body() const override {
    json b = json::object();
    if (any_candidate_)
      b["candidates"] = {{{"content", {{"role", "model"}, {"parts", parts_}}}, {"finishReason", finish_}}};
    if (!usage_.is_null()) b["usageMetadata"] = usage_;
    if (!model_.empty()) b["modelVersion"] = model_;
    if (!feedback_.is_null()) b["promptFeedback"] = feedback_;
    return b;
  }

 private:
  json parts_ = json::array(), usage_, feedback_;
  std::string model_, finish_;
  bool any_candidate_ = false;
};

class Gemini : public WireFormat {
 public:
  std::unique_ptr<StreamAssembler> assembler() const override { return std::make_unique<GeminiAssembler>(); }

  HttpRequest build(const ModelName& name, const std::string& key, const Request& req, bool stream) const override {
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
    gemini_conversation(req.conversation, contents);
    json body = {{"contents", contents}, {"generationConfig", {{"maxOutputTokens", req.max_output_tokens}}}};
    if (!req.tools.empty()) {
      json declarations = json::array();
      for (const ToolSpec& t : req.tools)
        declarations.push_back(
            {{"name", t.name}, {"description", t.description}, {"parameters", gemini_schema(t.parameters)}});
      body["tools"] = json::array({{{"functionDeclarations", declarations}}});
    }
    if (!req.system.empty()) body["systemInstruction"] = {{"parts", json::array({{{"text", req.system}}})}};
    if (req.temperature) body["generationConfig"]["temperature"] = *req.temperature;
    std::string method = stream ? ":streamGenerateContent?alt=sse" : ":generateContent";
    HttpRequest http = make_json_request(name.base_url + "/models/" + model + method, std::move(body), req);
    // Header, not ?key=: query strings end up in proxy and server logs.
    if (!key.empty()) http.headers.push_back("x-goog-api-key: " + key);
    return http;
  }

  AttemptVerdict parse(const json& j, Reply& r) const override {
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
      if (part.is_object() && part.contains("functionCall")) {
        const json& fc = obj(part, "functionCall");
        std::string id = str(fc, "id");
        if (id.empty()) id = kSynthesizedId + std::to_string(r.tool_calls.size());
        json args = fc.contains("args") ? fc["args"] : json::object();
        r.tool_calls.push_back({id, str(fc, "name"), args.dump(), str(part, "thoughtSignature")});
      } else if (part.is_object() && part.contains("thought") && part["thought"] == true)
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
