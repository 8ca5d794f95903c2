// Anthropic Messages API.
#include <spdlog/spdlog.h>

#include <map>

#include "models/wire_detail.h"

namespace pkb::models::detail {
namespace {

// The raw input text of a streamed tool_use block whose pieces did not make a JSON object.
constexpr const char* kPartial = "pkb_partial_json";

FinishReason anthropic_finish(const std::string& raw) {
  if (raw == "end_turn" || raw == "stop_sequence" || raw == "tool_use") return FinishReason::stop;
  // pause_turn: the API paused a long turn, to be continued: what came is not the whole answer.
  if (raw == "max_tokens" || raw == "model_context_window_exceeded" || raw == "pause_turn") return FinishReason::length;
  if (raw == "refusal") return FinishReason::refused;  // the streaming classifiers stopped the answer
  return FinishReason::other;                          // none, or a value pkb does not know: flagged
}

// Messages events: message_start (the message without content, input usage), per block content_block_start,
// content_block_delta (text_delta, thinking_delta, ...), content_block_stop; message_delta (stop_reason and
// cumulative usage), message_stop; ping keep-alives; an error event (overloaded_error, ...) ends the stream.
class AnthropicAssembler : public StreamAssembler {
 public:
  AttemptVerdict on_event(const SseEvent& e) override {
    json j;
    if (AttemptVerdict bad; !parse_event(e, j, bad)) return bad;
    std::string type = event_type(j, e);
    if (type == "error") return stream_error_verdict(e.data);
    if (type == "message_start") {
      if (!j.contains("message") || !j["message"].is_object()) return bad_response("message_start without a message");
      message_ = j["message"];
    } else if (type == "content_block_start") {
      blocks_[i64(j, "index")] = obj(j, "content_block");
    } else if (type == "content_block_delta") {
      const json& d = obj(j, "delta");
      json& block = blocks_[i64(j, "index")];
      std::string kind = str(d, "type");
      if (kind == "text_delta") append(block, "text", str(d, "text"));
      if (kind == "thinking_delta") append(block, "thinking", str(d, "thinking"));
      // A tool_use block's input streams as pieces of JSON text, parsed once whole (body()).
      if (kind == "input_json_delta") block[kPartial] = str(block, kPartial) + str(d, "partial_json");
      // signature_delta carries nothing an answer needs.
    } else if (type == "message_delta") {
      if (std::string stop = str(obj(j, "delta"), "stop_reason"); !stop.empty()) message_["stop_reason"] = stop;
      for (const auto& [k, v] : obj(j, "usage").items()) message_["usage"][k] = v;  // cumulative counts
    } else if (type == "message_stop") {
      done_ = true;
    }
    return {};
  }
  bool finished() const override { return done_; }
  bool complete() const override { return done_ || !str(message_, "stop_reason").empty(); }
  json body() const override {
    json b = message_;
    b["type"] = "message";
    b["content"] = json::array();
    for (const auto& [index, block] : blocks_) b["content"].push_back(with_input(block));
    return b;
  }

 private:
  // A tool_use block with its streamed input parsed; input that is not a JSON object stays raw in kPartial, for
  // parse() to hand on as the call's arguments (the model's own malformed text).
  static json with_input(json block) {
    if (!block.contains(kPartial)) return block;
    json input = json::parse(str(block, kPartial), nullptr, false);
    if (input.is_object() || str(block, kPartial).empty()) {
      block["input"] = input.is_object() ? input : json::object();
      block.erase(kPartial);
    }
    return block;
  }

  static void append(json& block, const char* field, const std::string& piece) {
    if (!block.is_object()) block = json::object();
    if (!block.contains("type")) block["type"] = field;  // a delta without its block start
    block[field] = str(block, field) + piece;
  }

  json message_ = json::object();
  std::map<int64_t, json> blocks_;  // by index: the order of the non-streamed content[]
  bool done_ = false;
};

// Agent mode: an assistant message of text and tool_use blocks; the results as tool_result blocks of a user
// message. Roles must alternate, so a user block that follows a user message joins it.
void anthropic_conversation(const std::vector<Message>& conversation, json& messages) {
  auto user_blocks = [&](json blocks) {
    if (messages.empty() || messages.back()["role"] != "user")
      return messages.push_back({{"role", "user"}, {"content", blocks}});
    for (auto& b : blocks) messages.back()["content"].push_back(b);
  };
  for (const Message& m : conversation) {
    if (m.role == Message::Role::user) user_blocks(json::array({{{"type", "text"}, {"text", m.text}}}));
    if (m.role == Message::Role::tool) {
      json blocks = json::array();
      for (const ToolResult& t : m.tool_results) {
        json b = {{"type", "tool_result"}, {"tool_use_id", t.call_id}, {"content", t.content}};
        if (t.is_error) b["is_error"] = true;
        blocks.push_back(b);
      }
      user_blocks(blocks);
    }
    if (m.role != Message::Role::assistant) continue;
    json content = json::array();
    if (!m.text.empty() || m.tool_calls.empty()) content.push_back({{"type", "text"}, {"text", m.text}});
    for (const ToolCall& c : m.tool_calls)
      content.push_back(
          {{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", arguments_object(c.arguments)}});
    messages.push_back({{"role", "assistant"}, {"content", content}});
  }
}

class Anthropic : public WireFormat {
 public:
  std::unique_ptr<StreamAssembler> assembler() const override { return std::make_unique<AnthropicAssembler>(); }

  HttpRequest build(const ModelName& name, const std::string& key, const Request& req, bool stream) const override {
    json messages = json::array();  // roles must alternate, starting with user
    for (const Exchange& e : req.history) {
      messages.push_back({{"role", "user"}, {"content", e.user}});
      messages.push_back({{"role", "assistant"}, {"content", e.assistant}});
    }
    messages.push_back({{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", req.user}}})}});
    if (req.conversation.empty()) messages.back()["content"] = req.user;  // plain requests read as before
    anthropic_conversation(req.conversation, messages);
    json body = {{"model", name.model},
                 {"max_tokens", req.max_output_tokens},  // required by this API
                 {"messages", messages}};
    for (const ToolSpec& t : req.tools)
      body["tools"].push_back({{"name", t.name}, {"description", t.description}, {"input_schema", t.parameters}});
    if (!req.system.empty()) body["system"] = req.system;
    if (stream) body["stream"] = true;
    if (req.temperature && !anthropic_rejects_temperature(name.model)) body["temperature"] = *req.temperature;
    if (req.temperature && anthropic_rejects_temperature(name.model))
      spdlog::debug("{}: temperature not sent (the model rejects sampling parameters)", name.spec());
    HttpRequest http = make_json_request(name.base_url + "/messages", std::move(body), req);
    http.headers.push_back("anthropic-version: 2023-06-01");
    if (!key.empty()) http.headers.push_back("x-api-key: " + key);
    return http;
  }

  AttemptVerdict parse(const json& j, Reply& r) const override {
    if (str(j, "type") == "error")
      return {ErrorKind::api_error, false, "error in 2xx body: " + clean_text(str(obj(j, "error"), "message")),
              std::nullopt};
    if (!j.contains("content") || !j["content"].is_array()) return bad_response("no content[] in reply");
    for (const auto& block : j["content"]) {
      std::string type = str(block, "type");
      if (type == "text") r.text += str(block, "text");
      if (type == "tool_use")
        r.tool_calls.push_back({str(block, "id"), str(block, "name"),
                                block.contains(kPartial) ? str(block, kPartial) : obj(block, "input").dump(), ""});
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
