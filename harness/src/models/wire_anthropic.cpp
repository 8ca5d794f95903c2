// Anthropic Messages API.
#include <spdlog/spdlog.h>

#include "models/wire_detail.h"

namespace pkb::models::detail {
namespace {

FinishReason anthropic_finish(const std::string& raw) {
  if (raw == "end_turn" || raw == "stop_sequence") return FinishReason::stop;
  if (raw == "max_tokens" || raw == "model_context_window_exceeded") return FinishReason::length;
  if (raw == "refusal") return FinishReason::refused;  // the streaming classifiers stopped the answer
  return FinishReason::other;  // pause_turn, tool_use
}

class Anthropic : public WireFormat {
 public:
  HttpRequest build(const ModelName& name, const std::string& key, const Request& req) const override {
    json messages = json::array();  // roles must alternate, starting with user
    for (const Exchange& e : req.history) {
      messages.push_back({{"role", "user"}, {"content", e.user}});
      messages.push_back({{"role", "assistant"}, {"content", e.assistant}});
    }
    messages.push_back({{"role", "user"}, {"content", req.user}});
    json body = {{"model", name.model},
                 {"max_tokens", req.max_output_tokens},  // required by this API
                 {"messages", messages}};
    if (!req.system.empty()) body["system"] = req.system;
    if (req.temperature && !anthropic_rejects_temperature(name.model)) body["temperature"] = *req.temperature;
    if (req.temperature && anthropic_rejects_temperature(name.model))
      spdlog::debug("{}: temperature not sent (the model rejects sampling parameters)", name.spec());
    HttpRequest http = make_json_request(name.base_url + "/messages", std::move(body), req);
    http.headers.push_back("anthropic-version: 2023-06-01");
    if (!key.empty()) http.headers.push_back("x-api-key: " + key);
    return http;
  }

  Verdict parse(const json& j, Reply& r) const override {
    if (str(j, "type") == "error")
      return {ErrorKind::api_error, false, "error in 2xx body: " + clean_text(str(obj(j, "error"), "message")),
              std::nullopt};
    if (!j.contains("content") || !j["content"].is_array()) return bad_response("no content[] in reply");
    for (const auto& block : j["content"]) {
      std::string type = str(block, "type");
      if (type == "text") r.text += str(block, "text");
      if (type == "thinking") append_para(r.reasoning, str(block, "thinking"));
      // redacted_thinking carries only opaque data.
    }
    r.finish_raw = str(j, "stop_reason");
    r.finish = anthropic_finish(r.finish_raw);
    r.model_reported = str(j, "model");
    if (j.contains("usage") && j["usage"].is_object()) {
      const json& u = j["usage"];
      // input_tokens excludes prompt-cache reads and writes; count them so input means the whole prompt.
      int64_t input =
          i64(u, "input_tokens") + i64(u, "cache_creation_input_tokens") + i64(u, "cache_read_input_tokens");
      r.usage = {true, input, i64(u, "output_tokens"), i64(obj(u, "output_tokens_details"), "thinking_tokens")};
    }
    return {};
  }
};

}  // namespace

std::unique_ptr<WireFormat> make_anthropic() { return std::make_unique<Anthropic>(); }

}  // namespace pkb::models::detail
