#include "models/types.h"

#include <array>
#include <utility>

namespace pkb::models {
namespace {

constexpr std::array<std::pair<FinishReason, const char*>, 4> kFinishNames = {{
    {FinishReason::stop, "stop"},
    {FinishReason::length, "length"},
    {FinishReason::refused, "refused"},
    {FinishReason::other, "other"},
}};

constexpr std::array<std::pair<ErrorKind, const char*>, 11> kErrorNames = {{
    {ErrorKind::none, "none"},
    {ErrorKind::transport, "transport"},
    {ErrorKind::timeout, "timeout"},
    {ErrorKind::rate_limited, "rate_limited"},
    {ErrorKind::quota, "quota"},
    {ErrorKind::auth, "auth"},
    {ErrorKind::bad_request, "bad_request"},
    {ErrorKind::server, "server"},
    {ErrorKind::bad_response, "bad_response"},
    {ErrorKind::api_error, "api_error"},
    {ErrorKind::not_sent, "not_sent"},
}};

template <class Table, class E>
const char* name_of(const Table& t, E e) {
  for (const auto& [value, name] : t)
    if (value == e) return name;
  return "?";
}

template <class E, class Table>
std::optional<E> value_of(const Table& t, const std::string& s) {
  for (const auto& [value, name] : t)
    if (s == name) return value;
  return std::nullopt;
}

}  // namespace

const char* finish_reason_name(FinishReason r) { return name_of(kFinishNames, r); }
std::optional<FinishReason> finish_reason_from_name(const std::string& s) {
  return value_of<FinishReason>(kFinishNames, s);
}
const char* error_kind_name(ErrorKind k) { return name_of(kErrorNames, k); }
bool stops_batch(ErrorKind k) { return k == ErrorKind::auth || k == ErrorKind::quota; }
std::optional<ErrorKind> error_kind_from_name(const std::string& s) { return value_of<ErrorKind>(kErrorNames, s); }

nlohmann::json history_json(const std::vector<Exchange>& history) {
  nlohmann::json out = nlohmann::json::array();
  for (const Exchange& e : history) out.push_back({{"user", e.user}, {"assistant", e.assistant}});
  return out;
}

nlohmann::json tools_json(const std::vector<ToolSpec>& tools) {
  nlohmann::json out = nlohmann::json::array();
  for (const ToolSpec& t : tools)
    out.push_back({{"name", t.name}, {"description", t.description}, {"parameters", t.parameters}});
  return out;
}

nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls) {
  nlohmann::json out = nlohmann::json::array();
  for (const ToolCall& c : calls) {
    nlohmann::json j = {{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}};
    if (!c.signature.empty()) j["signature"] = c.signature;
    out.push_back(j);
  }
  return out;
}

std::vector<ToolCall> tool_calls_from_json(const nlohmann::json& j) {
  std::vector<ToolCall> out;
  for (const auto& c : j)
    out.push_back({c.at("id").get<std::string>(), c.at("name").get<std::string>(), c.at("arguments").get<std::string>(),
                   c.value("signature", "")});
  return out;
}

namespace {
constexpr std::array<std::pair<Message::Role, const char*>, 3> kRoleNames = {{
    {Message::Role::user, "user"},
    {Message::Role::assistant, "assistant"},
    {Message::Role::tool, "tool"},
}};
}  // namespace

nlohmann::json conversation_json(const std::vector<Message>& conversation) {
  nlohmann::json out = nlohmann::json::array();
  for (const Message& m : conversation) {
    nlohmann::json j = {{"role", name_of(kRoleNames, m.role)}};
    if (m.role != Message::Role::tool) j["text"] = m.text;
    if (m.role == Message::Role::assistant) j["tool_calls"] = tool_calls_json(m.tool_calls);
    if (m.role == Message::Role::tool) {
      j["tool_results"] = nlohmann::json::array();
      for (const ToolResult& t : m.tool_results)
        j["tool_results"].push_back(
            {{"call_id", t.call_id}, {"name", t.name}, {"content", t.content}, {"is_error", t.is_error}});
    }
    out.push_back(j);
  }
  return out;
}

std::vector<Message> conversation_from_json(const nlohmann::json& j) {
  std::vector<Message> out;
  for (const auto& m : j) {
    Message msg;
    auto role = value_of<Message::Role>(kRoleNames, m.at("role").get<std::string>());
    if (!role) throw nlohmann::json::other_error::create(501, "unknown message role", &m);
    msg.role = *role;
    msg.text = m.value("text", "");
    if (m.contains("tool_calls")) msg.tool_calls = tool_calls_from_json(m["tool_calls"]);
    for (const auto& t : m.value("tool_results", nlohmann::json::array()))
      msg.tool_results.push_back({t.at("call_id").get<std::string>(), t.at("name").get<std::string>(),
                                  t.at("content").get<std::string>(), t.value("is_error", false)});
    out.push_back(std::move(msg));
  }
  return out;
}

nlohmann::json to_json(const Request& r) {
  nlohmann::json j = {{"system", r.system},
                      {"user", r.user},
                      {"max_output_tokens", r.max_output_tokens},
                      {"temperature", r.temperature ? nlohmann::json(*r.temperature) : nlohmann::json()},
                      {"sample_index", r.sample_index},
                      {"extra", r.extra}};
  if (!r.history.empty()) j["history"] = history_json(r.history);  // single-turn requests read as before
  if (!r.conversation.empty()) j["conversation"] = conversation_json(r.conversation);
  if (!r.tools.empty()) j["tools"] = tools_json(r.tools);
  return j;
}

nlohmann::json to_json(const Reply& r) {
  nlohmann::json j = {{"text", r.text},
                      {"reasoning", r.reasoning},
                      {"finish", finish_reason_name(r.finish)},
                      {"finish_raw", r.finish_raw},
                      {"usage",
                       {{"known", r.usage.known},
                        {"input_tokens", r.usage.input_tokens},
                        {"output_tokens", r.usage.output_tokens},
                        {"reasoning_tokens", r.usage.reasoning_tokens}}},
                      {"model_reported", r.model_reported},
                      {"request_id", r.request_id},
                      {"latency_s", r.latency_s},
                      {"attempts", r.attempts},
                      {"http_status", r.http_status},
                      {"error", error_kind_name(r.error)},
                      {"error_message", r.error_message},
                      {"streamed", r.streamed},
                      {"broken_streams", r.broken_streams},
                      {"sent", r.sent}};
  if (!r.tool_calls.empty()) j["tool_calls"] = tool_calls_json(r.tool_calls);  // replies without calls read as before
  return j;
}

Reply reply_from_json(const nlohmann::json& j) {
  Reply r;
  r.text = j.at("text").get<std::string>();
  r.reasoning = j.value("reasoning", "");
  r.finish = finish_reason_from_name(j.at("finish").get<std::string>()).value_or(FinishReason::other);
  r.finish_raw = j.value("finish_raw", "");
  const auto& u = j.at("usage");
  r.usage = {u.value("known", false), u.value("input_tokens", int64_t{0}), u.value("output_tokens", int64_t{0}),
             u.value("reasoning_tokens", int64_t{0})};
  r.model_reported = j.value("model_reported", "");
  r.request_id = j.value("request_id", "");
  r.latency_s = j.value("latency_s", 0.0);
  r.attempts = j.value("attempts", 0);
  r.http_status = j.value("http_status", 0L);
  r.error = error_kind_from_name(j.value("error", "none")).value_or(ErrorKind::api_error);
  r.error_message = j.value("error_message", "");
  r.streamed = j.value("streamed", false);  // entries cached before streaming existed were buffered
  r.broken_streams = j.value("broken_streams", 0);
  r.sent = j.value("sent", nlohmann::json());
  if (j.contains("tool_calls")) r.tool_calls = tool_calls_from_json(j["tool_calls"]);
  return r;
}

}  // namespace pkb::models
