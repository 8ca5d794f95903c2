// OpenAI Chat Completions, OpenAI-compatible servers (same shape, looser rules) and the Responses API.
#include <spdlog/spdlog.h>

#include <map>

#include "models/wire_detail.h"

namespace pkb::models::detail {
namespace {

FinishReason chat_finish(const std::string& raw) {
  if (raw == "stop" || raw == "tool_calls") return FinishReason::stop;  // a tool call ends the turn normally
  if (raw == "length" || raw == "abort") return FinishReason::length;   // vLLM: the server aborted the request
  if (raw == "content_filter" || raw == "refusal") return FinishReason::refused;
  return FinishReason::other;  // tool_calls, function_call, none, or a value pkb does not know: kept, flagged
}

// A Responses status (types.h FinishReason): completed is the only normal end; incomplete is cut at a limit
// (max_output_tokens, or no reason given) unless the content filter cut it; cancelled, in_progress and queued
// are answers that never finished. `reason` is incomplete_details.reason.
FinishReason responses_finish(const std::string& status, const std::string& reason) {
  if (status == "completed") return FinishReason::stop;
  if (status == "incomplete") return reason == "content_filter" ? FinishReason::refused : FinishReason::length;
  if (status == "cancelled" || status == "in_progress" || status == "queued") return FinishReason::length;
  return FinishReason::other;  // no status, or one pkb does not know
}

// content is a string, null (refusal/tool call) or, on some servers, an array of text parts.
std::string content_text(const json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array())
    for (const auto& part : content) out += str(part, "text");
  return out;
}

// Agent mode: the messages after the first user prompt, as Chat Completions wants them.
void append_chat_conversation(const std::vector<Message>& conversation, json& messages) {
  for (const Message& m : conversation) {
    if (m.role == Message::Role::user) messages.push_back({{"role", "user"}, {"content", m.text}});
    if (m.role == Message::Role::tool)
      for (const ToolResult& t : m.tool_results)
        messages.push_back({{"role", "tool"}, {"tool_call_id", t.call_id}, {"content", t.content}});
    if (m.role != Message::Role::assistant) continue;
    json msg = {{"role", "assistant"}, {"content", m.text.empty() && !m.tool_calls.empty() ? json() : json(m.text)}};
    for (const ToolCall& c : m.tool_calls)
      msg["tool_calls"].push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    messages.push_back(msg);
  }
}

json chat_tools(const std::vector<ToolSpec>& tools) {
  json out = json::array();
  for (const ToolSpec& t : tools)
    out.push_back({{"type", "function"},
                   {"function", {{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}}}});
  return out;
}

std::vector<ToolCall> chat_tool_calls(const json& msg) {
  std::vector<ToolCall> out;
  for (const auto& c : arr(msg, "tool_calls")) {
    const json& f = obj(c, "function");
    out.push_back({str(c, "id"), str(f, "name"), str(f, "arguments"), ""});
  }
  return out;
}

void drop_temperature(const ModelName& name, json& body) {
  if (body.erase("temperature"))
    spdlog::debug("{}: temperature not sent (reasoning models accept only the default)", name.spec());
}

class OpenAIChat : public WireFormat {
 public:
  explicit OpenAIChat(bool compat) : compat_(compat) {}

  HttpRequest build(const ModelName& name, const std::string& key, const Request& req, bool stream) const override {
    bool reasoning = !compat_ && openai_is_reasoning_model(name.model);
    json messages = json::array();
    // OpenAI's reasoning models take "developer"; compatible servers feed roles to chat templates that only
    // know "system".
    if (!req.system.empty())
      messages.push_back({{"role", reasoning ? "developer" : "system"}, {"content", req.system}});
    for (const Exchange& e : req.history) {
      messages.push_back({{"role", "user"}, {"content", e.user}});
      messages.push_back({{"role", "assistant"}, {"content", e.assistant}});
    }
    messages.push_back({{"role", "user"}, {"content", req.user}});
    append_chat_conversation(req.conversation, messages);
    json body = {{"model", name.model}, {"messages", messages}};
    if (!req.tools.empty()) body["tools"] = chat_tools(req.tools);
    // Ollama ignores max_completion_tokens and OpenAI rejects max_tokens on reasoning models.
    body[compat_ ? "max_tokens" : "max_completion_tokens"] = req.max_output_tokens;
    if (req.temperature) body["temperature"] = *req.temperature;
    if (reasoning) drop_temperature(name, body);
    if (stream) {
      body["stream"] = true;
      // Without it the stream carries no usage at all; with it a last chunk (choices: []) does.
      body["stream_options"] = {{"include_usage", true}};
    }
    HttpRequest http = make_json_request(name.base_url + "/chat/completions", std::move(body), req);
    if (!key.empty()) http.headers.push_back("Authorization: Bearer " + key);
    return http;
  }

  std::unique_ptr<StreamAssembler> assembler() const override;

  AttemptVerdict parse(const json& j, Reply& r) const override {
    if (j.contains("error") && !j.contains("choices"))
      return {ErrorKind::api_error, false, "error in 2xx body: " + clean_text(j["error"].dump()), std::nullopt};
    const json& choices = arr(j, "choices");
    if (choices.empty() || !choices[0].is_object() || !choices[0].contains("message") ||
        !choices[0]["message"].is_object())
      return bad_response("no choices[0].message in reply");
    const json& msg = obj(choices[0], "message");
    r.text = content_text(msg.value("content", json()));
    r.tool_calls = chat_tool_calls(msg);
    // DeepSeek/SGLang/old vLLM say reasoning_content, new vLLM/Ollama/Together say reasoning.
    append_para(r.reasoning, str(msg, "reasoning_content"));
    if (str(msg, "reasoning") != str(msg, "reasoning_content")) append_para(r.reasoning, str(msg, "reasoning"));
    r.finish_raw = str(choices[0], "finish_reason");
    if (r.text.empty() && !str(msg, "refusal").empty()) r.text = str(msg, "refusal"), r.finish_raw = "refusal";
    r.finish = chat_finish(r.finish_raw);
    r.model_reported = str(j, "model");
    if (j.contains("usage") && j["usage"].is_object()) {
      const json& u = j["usage"];
      int64_t reasoning = i64(obj(u, "completion_tokens_details"), "reasoning_tokens");
      if (reasoning == 0) reasoning = i64(u, "reasoning_tokens");  // SGLang puts it at top level
      r.usage = {true, i64(u, "prompt_tokens"), i64(u, "completion_tokens"), reasoning};
    }
    return {};
  }

 private:
  bool compat_;
};

// chat.completion.chunk events: choices[0].delta pieces, finish_reason in the last choice chunk, usage in a
// chunk of its own (stream_options.include_usage), then "data: [DONE]".
class ChatAssembler : public StreamAssembler {
 public:
  AttemptVerdict on_event(const SseEvent& e) override {
    if (e.data == "[DONE]") {
      done_ = true;
      return {};
    }
    json j;
    if (AttemptVerdict bad; !parse_event(e, j, bad)) return bad;
    // OpenAI sends {"error": {...}} mid-stream; vLLM and SGLang a flat {"object": "error", ...}.
    if ((j.contains("error") && !j.contains("choices")) || str(j, "object") == "error")
      return stream_error_verdict(e.data);
    if (model_.empty()) model_ = str(j, "model");
    if (j.contains("usage") && j["usage"].is_object()) usage_ = j["usage"];
    for (const auto& c : arr(j, "choices")) {
      if (i64(c, "index") != 0) continue;  // we ask for one choice
      any_choice_ = true;
      const json& d = obj(c, "delta");
      content_ += content_text(d.value("content", json()));
      reasoning_content_ += str(d, "reasoning_content");
      reasoning_ += str(d, "reasoning");
      refusal_ += str(d, "refusal");
      add_tool_call_deltas(arr(d, "tool_calls"));
      if (!str(c, "finish_reason").empty()) finish_ = str(c, "finish_reason");
    }
    return {};
  }
  bool finished() const override { return done_; }
  bool complete() const override { return done_ || !finish_.empty(); }
  json body() const override {
    json msg = {{"role", "assistant"}, {"content", content_}};
    if (!reasoning_content_.empty()) msg["reasoning_content"] = reasoning_content_;
    if (!reasoning_.empty()) msg["reasoning"] = reasoning_;
    if (!refusal_.empty()) msg["refusal"] = refusal_;
    for (const auto& [index, call] : calls_) msg["tool_calls"].push_back(call);
    json choices = json::array();
    if (any_choice_)
      choices.push_back({{"index", 0}, {"message", msg}, {"finish_reason", finish_.empty() ? json() : json(finish_)}});
    json b = {{"object", "chat.completion"}, {"model", model_}, {"choices", choices}};
    if (!usage_.is_null()) b["usage"] = usage_;
    return b;
  }

 private:
  // Tool calls stream as deltas keyed by index: the first carries id and name, the rest pieces of arguments. Some
  // compatible servers leave the index out (a delta with a new id then starts the next call, any other continues the
  // last) or repeat the whole name in every delta (kept once).
  void add_tool_call_deltas(const json& deltas) {
    for (const auto& d : deltas) {
      json& call = calls_[delta_index(d)];
      if (call.is_null()) call = {{"id", ""}, {"type", "function"}, {"function", {{"name", ""}, {"arguments", ""}}}};
      if (!str(d, "id").empty()) call["id"] = str(d, "id");
      const json& f = obj(d, "function");
      const std::string name = str(call["function"], "name");
      if (str(f, "name") != name) call["function"]["name"] = name + str(f, "name");
      call["function"]["arguments"] = str(call["function"], "arguments") + str(f, "arguments");
    }
  }
  int64_t delta_index(const json& d) const {
    if (d.contains("index") && d["index"].is_number_integer()) return d["index"].get<int64_t>();
    if (calls_.empty()) return 0;
    const auto& [last, call] = *calls_.rbegin();
    const std::string id = str(d, "id");
    return !id.empty() && !str(call, "id").empty() && id != str(call, "id") ? last + 1 : last;
  }

  std::string model_, content_, reasoning_content_, reasoning_, refusal_, finish_;
  std::map<int64_t, json> calls_;  // by the delta's index: the order of message.tool_calls
  json usage_;
  bool any_choice_ = false, done_ = false;
};

std::unique_ptr<StreamAssembler> OpenAIChat::assembler() const { return std::make_unique<ChatAssembler>(); }

// Responses events: deltas (response.output_text.delta, ...) as they come, then one terminal event carrying
// the whole response object (response.completed / response.incomplete / response.failed), or an "error"
// event. The terminal response is what parse() reads; the deltas stand in only where it lacks output[].
class ResponsesAssembler : public StreamAssembler {
 public:
  AttemptVerdict on_event(const SseEvent& e) override {
    json j;
    if (AttemptVerdict bad; !parse_event(e, j, bad)) return bad;
    std::string type = event_type(j, e);
    if (type == "error") return stream_error_verdict(e.data);
    if (type == "response.output_text.delta") text_ += str(j, "delta");
    if (type == "response.refusal.delta") refusal_ += str(j, "delta");
    if (type == "response.reasoning_summary_text.delta" || type == "response.reasoning_text.delta") {
      std::string part = str(j, "item_id") + "/" + std::to_string(i64(j, "summary_index")) + "/" +
                         std::to_string(i64(j, "content_index"));
      if (part != reasoning_part_ && !reasoning_.empty()) reasoning_ += "\n\n";
      reasoning_part_ = part;
      reasoning_ += str(j, "delta");
    }
    if (type == "response.output_item.added" || type == "response.output_item.done") {
      if (str(obj(j, "item"), "type") == "function_call") calls_[i64(j, "output_index")] = j["item"];
    }
    if (type == "response.function_call_arguments.delta") {
      json& call = calls_[i64(j, "output_index")];
      call["type"] = "function_call";
      call["arguments"] = str(call, "arguments") + str(j, "delta");
    }
    if (type == "response.function_call_arguments.done")
      calls_[i64(j, "output_index")]["arguments"] = str(j, "arguments");
    if (type == "response.completed" || type == "response.incomplete" || type == "response.failed") {
      if (!j.contains("response") || !j["response"].is_object())
        return bad_response(type + " event without a response object");
      final_ = j["response"];
      // The event's name says how it ended where its response does not; a status it does carry wins (a
      // response.completed whose response says "incomplete" is incomplete).
      if (str(final_, "status").empty()) final_["status"] = type.substr(std::string("response.").size());
      done_ = true;
    }
    return {};
  }
  bool finished() const override { return done_; }
  bool complete() const override { return done_; }
  json body() const override {
    json b = final_;
    if (!b.contains("output") || !b["output"].is_array() || b["output"].empty()) {
      json out = json::array();
      if (!reasoning_.empty())
        out.push_back({{"type", "reasoning"}, {"summary", {{{"type", "summary_text"}, {"text", reasoning_}}}}});
      json content = json::array();
      if (!text_.empty()) content.push_back({{"type", "output_text"}, {"text", text_}});
      if (!refusal_.empty()) content.push_back({{"type", "refusal"}, {"refusal", refusal_}});
      if (!content.empty()) out.push_back({{"type", "message"}, {"content", content}});
      for (const auto& [index, call] : calls_) out.push_back(call);
      // Nothing streamed either: the body stays without output[], as the same reply buffered would be.
      if (!out.empty()) b["output"] = out;
    }
    return b;
  }

 private:
  std::string text_, refusal_, reasoning_, reasoning_part_;
  std::map<int64_t, json> calls_;  // function_call items by output_index, for a terminal event without output[]
  json final_ = json::object();
  bool done_ = false;
};

class OpenAIResponses : public WireFormat {
 public:
  std::unique_ptr<StreamAssembler> assembler() const override { return std::make_unique<ResponsesAssembler>(); }

  HttpRequest build(const ModelName& name, const std::string& key, const Request& req, bool stream) const override {
    // store=false: the Responses API keeps responses by default; we never chain on them (previous_response_id):
    // a later turn resends the conversation as input items, like every other wire format.
    json input = req.user;
    if (!req.history.empty() || !req.conversation.empty()) {
      input = json::array();
      for (const Exchange& e : req.history) {
        input.push_back({{"role", "user"}, {"content", e.user}});
        input.push_back({{"role", "assistant"}, {"content", e.assistant}});
      }
      input.push_back({{"role", "user"}, {"content", req.user}});
      append_conversation(req.conversation, input);
    }
    json body = {{"model", name.model},
                 {"input", input},
                 {"max_output_tokens", std::max(16, req.max_output_tokens)},  // API minimum is 16
                 {"store", false}};
    if (!req.system.empty()) body["instructions"] = req.system;
    for (const ToolSpec& t : req.tools)
      body["tools"].push_back(
          {{"type", "function"}, {"name", t.name}, {"description", t.description}, {"parameters", t.parameters}});
    if (req.temperature) body["temperature"] = *req.temperature;
    if (openai_is_reasoning_model(name.model)) drop_temperature(name, body);
    if (stream) body["stream"] = true;
    HttpRequest http = make_json_request(name.base_url + "/responses", std::move(body), req);
    if (!key.empty()) http.headers.push_back("Authorization: Bearer " + key);
    return http;
  }

  AttemptVerdict parse(const json& j, Reply& r) const override {
    std::string status = str(j, "status");
    if (status == "failed") {  // with or without an error object: never an answer
      const json& err = obj(j, "error");
      std::string code = str(err, "code"), message = clean_text(str(err, "message"));
      bool transient = code == "server_error" || code == "rate_limit_exceeded";
      return {ErrorKind::api_error, transient,
              "response failed" + (code.empty() ? "" : ": " + code) + (message.empty() ? "" : ": " + message),
              std::nullopt};
    }
    if (!j.contains("output") || !j["output"].is_array()) return bad_response("no output[] in reply");
    for (const auto& item : j["output"]) read_item(item, r);
    std::string reason = str(obj(j, "incomplete_details"), "reason");
    FinishReason finish = responses_finish(status, reason);
    if (finish == FinishReason::stop && r.finish_raw == "refusal") {
      r.finish = FinishReason::refused;  // a completed response whose message is a refusal
    } else {
      r.finish = finish;
      r.finish_raw = status == "incomplete" && !reason.empty() ? "incomplete:" + reason : status;
    }
    r.model_reported = str(j, "model");
    if (j.contains("usage") && j["usage"].is_object()) {
      const json& u = j["usage"];
      r.usage = {true, i64(u, "input_tokens"), i64(u, "output_tokens"),
                 i64(obj(u, "output_tokens_details"), "reasoning_tokens")};
    }
    return {};
  }

 private:
  // Agent mode: assistant text and function_call items, then function_call_output items with the results.
  static void append_conversation(const std::vector<Message>& conversation, json& input) {
    for (const Message& m : conversation) {
      if (m.role == Message::Role::user) input.push_back({{"role", "user"}, {"content", m.text}});
      if (m.role == Message::Role::assistant && !m.text.empty())
        input.push_back({{"role", "assistant"}, {"content", m.text}});
      for (const ToolCall& c : m.tool_calls)
        input.push_back({{"type", "function_call"}, {"call_id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
      for (const ToolResult& t : m.tool_results)
        input.push_back({{"type", "function_call_output"}, {"call_id", t.call_id}, {"output", t.content}});
    }
  }

  static void read_item(const json& item, Reply& r) {
    std::string type = str(item, "type");
    if (type == "function_call") {
      r.tool_calls.push_back({str(item, "call_id"), str(item, "name"), str(item, "arguments"), ""});
    } else if (type == "message") {
      for (const auto& part : arr(item, "content")) {
        if (str(part, "type") == "output_text") r.text += str(part, "text");
        if (str(part, "type") == "refusal") r.text += str(part, "refusal"), r.finish_raw = "refusal";
      }
    } else if (type == "reasoning") {
      for (const auto& s : arr(item, "summary")) append_para(r.reasoning, str(s, "text"));
      for (const auto& c : arr(item, "content")) append_para(r.reasoning, str(c, "text"));
    }
  }
};

}  // namespace

std::unique_ptr<WireFormat> make_openai_chat(bool compat) { return std::make_unique<OpenAIChat>(compat); }
std::unique_ptr<WireFormat> make_openai_responses() { return std::make_unique<OpenAIResponses>(); }

}  // namespace pkb::models::detail
