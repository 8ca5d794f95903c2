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

nlohmann::json to_json(const Request& r) {
  nlohmann::json j = {{"system", r.system},
                      {"user", r.user},
                      {"max_output_tokens", r.max_output_tokens},
                      {"temperature", r.temperature ? nlohmann::json(*r.temperature) : nlohmann::json()},
                      {"sample_index", r.sample_index},
                      {"extra", r.extra}};
  if (!r.history.empty()) j["history"] = history_json(r.history);  // single-turn requests read as before
  return j;
}

nlohmann::json to_json(const Reply& r) {
  return {{"text", r.text},
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
  return r;
}

}  // namespace pkb::models
