#include "models/wire.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "models/extract.h"
#include "models/wire_detail.h"

namespace pkb::models {
namespace detail {

std::string str(const json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

int64_t i64(const json& j, const char* key) {
  if (!j.is_object()) return 0;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

const json& obj(const json& j, const char* key) {
  static const json empty = json::object();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : empty;
}

const json& arr(const json& j, const char* key) {
  static const json empty = json::array();
  if (!j.is_object()) return empty;
  auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : empty;
}

void append_para(std::string& to, const std::string& piece) {
  if (piece.empty()) return;
  if (!to.empty()) to += "\n\n";
  to += piece;
}

json arguments_object(const std::string& arguments) {
  json j = json::parse(arguments, nullptr, false);
  return j.is_object() ? j : json::object();
}

HttpRequest make_json_request(std::string url, json body, const Request& req) {
  if (req.extra.is_object()) body.merge_patch(req.extra);
  // Text from outside (a tool result quoting a compiler, a model's own arguments) may hold bytes that are not
  // UTF-8: they go as U+FFFD rather than failing the request.
  return {
      std::move(url), {"Content-Type: application/json"}, body.dump(-1, ' ', false, json::error_handler_t::replace)};
}

// Retried: a 2xx whose body is cut or empty is usually a proxy or a transient server fault; never cached.
AttemptVerdict bad_response(const std::string& what) { return {ErrorKind::bad_response, true, what, std::nullopt}; }

bool parse_event(const SseEvent& e, json& j, AttemptVerdict& bad) {
  j = json::parse(e.data, nullptr, false);
  if (j.is_object()) return true;
  bad = bad_response("malformed stream event: " + clean_text(e.data, 200));
  return false;
}

std::string event_type(const json& j, const SseEvent& e) {
  std::string type = str(j, "type");
  return type.empty() ? e.event : type;
}

}  // namespace detail

std::unique_ptr<WireFormat> make_wire_format(Api api) {
  switch (api) {
    case Api::openai_chat:
      return detail::make_openai_chat(false);
    case Api::openai_compat:
      return detail::make_openai_chat(true);
    case Api::openai_responses:
      return detail::make_openai_responses();
    case Api::anthropic:
      return detail::make_anthropic();
    case Api::gemini:
      return detail::make_gemini();
  }
  return nullptr;
}

AttemptVerdict parse_success(const WireFormat& wire, std::string_view body, Reply& reply) {
  // Leading blank lines (DeepSeek keep-alive) are JSON whitespace, so they parse fine.
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return detail::bad_response("HTTP " + std::to_string(reply.http_status) +
                                " body is not a JSON object: " + clean_text(body, 200));
  return parse_assembled(wire, j, reply);
}

AttemptVerdict parse_assembled(const WireFormat& wire, const nlohmann::json& j, Reply& reply) {
  AttemptVerdict v;
  try {
    v = wire.parse(j, reply);
  } catch (const nlohmann::json::exception& e) {  // a field of an unexpected type
    return detail::bad_response(std::string("unexpected reply structure: ") + e.what());
  }
  if (v.kind != ErrorKind::none) return v;
  ThinkSplit split = split_think(reply.text);
  if (!split.reasoning.empty()) {
    reply.text = std::move(split.answer);
    detail::append_para(reply.reasoning, split.reasoning);
  }
  // Nothing said and no word on why it ended (a stream of message_start and message_stop, a choice without content or
  // finish_reason): the server's fault, not the model's answer. Retried and never cached, buffered or streamed alike;
  // an answer the provider ended (end_turn, stop, MAX_TOKENS, ...) stays one, empty or not.
  if (reply.text.empty() && reply.tool_calls.empty() && reply.finish_raw.empty())
    return detail::bad_response("a reply without an answer: no text, no tool call and no stop reason");
  return v;
}

AttemptVerdict stream_error_verdict(std::string_view event_data) {
  ErrorBody e = parse_error_body(event_data);
  std::string label = !e.type.empty() ? e.type : !e.status.empty() ? e.status : e.code;  // Google: status over 503
  std::string low = label;
  std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
  auto has = [&](const char* s) { return low.find(s) != std::string::npos; };
  AttemptVerdict v{ErrorKind::api_error, true, "stream error event: " + (label.empty() ? "" : label + ": ") + e.message,
                   std::nullopt};
  if (has("quota") || has("billing") || has("spend_limit") || has("insufficient_balance"))
    v.kind = ErrorKind::quota, v.retry = false;
  else if (has("rate_limit") || has("resource_exhausted"))
    v.kind = ErrorKind::rate_limited;
  else if (has("overloaded") || has("server") || has("internal") || has("unavailable") || has("api_error") ||
           has("timeout") || has("deadline"))
    v.kind = ErrorKind::server;
  else if (has("authentication") || has("permission") || has("unauthenticated"))
    v.kind = ErrorKind::auth, v.retry = false;
  else if (has("invalid") || has("not_found") || has("bad_request") || has("too_large"))
    v.kind = ErrorKind::bad_request, v.retry = false;
  return v;
}

bool openai_is_reasoning_model(std::string_view model) {
  if (model.size() >= 2 && model[0] == 'o' && std::isdigit(static_cast<unsigned char>(model[1]))) return true;
  // gpt-5 family reasons, except the "-chat" snapshots that behave like classic chat models.
  return model.rfind("gpt-5", 0) == 0 && model.find("-chat") == std::string_view::npos;
}

bool anthropic_rejects_temperature(std::string_view model) {
  static constexpr std::array<std::string_view, 4> kPrefixes = {"claude-opus-4-7", "claude-opus-4-8", "claude-opus-5",
                                                                "claude-sonnet-5"};
  for (auto p : kPrefixes)
    if (model.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace pkb::models
