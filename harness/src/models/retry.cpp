#include "models/retry.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>

namespace pkb::models {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

std::optional<double> parse_number(std::string_view s) {
  double v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string_view trim_view(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string json_text(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const auto& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  return "";
}

// Replaces the handful of entities that show up in error pages; others stay as written.
std::string decode_entities(std::string s) {
  static const std::array<std::pair<const char*, const char*>, 6> kEntities = {
      {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&nbsp;", " "}}};
  for (const auto& [from, to] : kEntities)
    for (size_t p = 0; (p = s.find(from, p)) != std::string::npos; p += std::strlen(to))
      s.replace(p, std::strlen(from), to);
  return s;
}

std::string strip_tags(std::string_view html) {
  std::string out;
  bool in_tag = false;
  for (char c : html) {
    if (c == '<')
      in_tag = true;
    else if (c == '>' && in_tag)
      in_tag = false, out += ' ';
    else if (!in_tag)
      out += c;
  }
  return out;
}

std::string html_to_text(std::string_view html) {
  std::string low = lower(html);
  size_t t0 = low.find("<title");
  if (t0 != std::string::npos) {
    size_t open_end = low.find('>', t0), close = low.find("</title", t0);
    if (open_end != std::string::npos && close != std::string::npos && close > open_end)
      return std::string(html.substr(open_end + 1, close - open_end - 1));
  }
  // Drop <head>/<style>/<script> content would need a parser; tag stripping is enough for gateway pages.
  return strip_tags(html);
}

bool looks_like_html(std::string_view s) {
  std::string head = lower(s.substr(0, 512));
  return contains(head, "<html") || contains(head, "<!doctype") || contains(head, "<title") ||
         contains(head, "<body") || contains(head, "<center") || contains(head, "<h1");
}

// Markers of exhausted credit or quota, matched against error codes/types anywhere in the body. These are not
// transient: retrying only burns attempts (OpenAI insufficient_quota, Anthropic billing_error and
// enforced_spend_limit_reached, DeepSeek insufficient balance).
constexpr std::array<const char*, 6> kQuotaCodes = {"insufficient_quota",           "billing_hard_limit_reached",
                                                    "billing_not_active",           "billing_error",
                                                    "enforced_spend_limit_reached", "insufficient_balance"};

bool has_quota_code(const nlohmann::json& j) {
  if (j.is_array()) return std::any_of(j.begin(), j.end(), [](const auto& v) { return has_quota_code(v); });
  if (!j.is_object()) return false;
  for (const auto& [key, v] : j.items()) {
    if (v.is_string() && (key == "code" || key == "type" || key == "error_code" || key == "reason")) {
      std::string s = v.get<std::string>();
      if (std::find(kQuotaCodes.begin(), kQuotaCodes.end(), s) != kQuotaCodes.end()) return true;
    }
    if ((v.is_object() || v.is_array()) && has_quota_code(v)) return true;
  }
  return false;
}

// Gemini QuotaFailure violations name the window in quotaId ("...PerDay..."): a daily quota will not come
// back within any sensible retry budget, a per-minute one will.
bool has_daily_quota(const nlohmann::json& j) {
  if (j.is_array()) return std::any_of(j.begin(), j.end(), [](const auto& v) { return has_daily_quota(v); });
  if (!j.is_object()) return false;
  for (const auto& [key, v] : j.items()) {
    if (key == "quotaId" && v.is_string() && contains(v.get<std::string>(), "PerDay")) return true;
    if ((v.is_object() || v.is_array()) && has_daily_quota(v)) return true;
  }
  return false;
}

bool is_quota(long status, const ErrorBody& e) {
  if (status == 402) return true;
  if (has_quota_code(e.json) || has_daily_quota(e.json)) return true;
  // Anthropic reports a spend limit you set as a plain 400 invalid_request_error; only the text tells.
  std::string msg = lower(e.message);
  // Not "exceeded your current quota": Gemini uses those words for retryable per-minute limits too.
  return status >= 400 && status < 500 && (contains(msg, "spend limit") || contains(msg, "credit balance is too low"));
}

std::optional<double> gemini_retry_delay(const nlohmann::json& body) {
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return std::nullopt;
  const auto& details = body["error"].value("details", nlohmann::json::array());
  if (!details.is_array()) return std::nullopt;
  for (const auto& d : details) {
    if (d.is_object() && contains(d.value("@type", ""), "RetryInfo") && d.contains("retryDelay") &&
        d["retryDelay"].is_string())
      return parse_duration_s(d["retryDelay"].get<std::string>());
  }
  return std::nullopt;
}

ErrorKind kind_for_status(long status) {
  if (status == 401 || status == 403) return ErrorKind::auth;
  if (status == 408) return ErrorKind::timeout;
  if (status == 429) return ErrorKind::rate_limited;
  if (status == 409 || status >= 500) return ErrorKind::server;
  return ErrorKind::bad_request;
}

bool retryable_status(long status) { return status == 408 || status == 409 || status == 429 || status >= 500; }

std::string describe(long status, const ErrorBody& e) {
  // vLLM, Cloudflare and Google repeat the status as "code"; a type or canonical status says more.
  std::string label = e.code == std::to_string(status) ? "" : e.code;
  if (label.empty()) label = !e.type.empty() ? e.type : e.status;
  return "HTTP " + std::to_string(status) + (label.empty() ? "" : " " + label) + ": " +
         (e.message.empty() ? "(empty body)" : e.message);
}

}  // namespace

std::optional<double> parse_duration_s(std::string_view s) {
  s = trim_view(s);
  double scale = 1;
  if (s.size() > 2 && s.substr(s.size() - 2) == "ms")
    s.remove_suffix(2), scale = 1e-3;
  else if (s.size() > 1 && s.back() == 's')
    s.remove_suffix(1);
  else
    return std::nullopt;
  auto v = parse_number(s);
  if (!v || *v < 0) return std::nullopt;
  return *v * scale;
}

std::optional<double> parse_retry_after(std::string_view value, std::time_t now) {
  value = trim_view(value);
  if (value.empty()) return std::nullopt;
  if (auto v = parse_number(value)) return *v >= 0 ? v : std::nullopt;
  std::tm tm{};
  std::string s(value);
  const char* end = strptime(s.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  return std::max(0.0, std::difftime(timegm(&tm), now));
}

std::optional<double> retry_hint_s(const HttpResponse& resp, std::time_t now) {
  if (auto ms = parse_number(trim_view(resp.header("retry-after-ms"))); ms && *ms >= 0) return *ms / 1000;
  if (auto s = parse_retry_after(resp.header("retry-after"), now)) return s;
  if (resp.body.find("RetryInfo") == std::string::npos) return std::nullopt;
  return gemini_retry_delay(nlohmann::json::parse(resp.body, nullptr, false));
}

double backoff_delay_s(const RetryPolicy& p, int retry_index, std::optional<double> hint_s, double unit_random) {
  if (hint_s) return std::min(*hint_s, p.max_hint_s);
  double exp = p.base_delay_s * std::pow(2.0, std::min(retry_index, 30));
  return std::min(p.max_delay_s, exp) * (0.5 + 0.5 * std::clamp(unit_random, 0.0, 1.0));
}

std::string clean_text(std::string_view text, size_t max_len) {
  std::string s = looks_like_html(text) ? decode_entities(html_to_text(text)) : std::string(text);
  std::string out;
  for (char c : s) {
    bool space = std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c));
    if (!space)
      out += c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > max_len) {
    size_t cut = max_len;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // keep UTF-8 whole
    out = out.substr(0, cut) + "...";
  }
  return out;
}

ErrorBody parse_error_body(std::string_view body) {
  ErrorBody e;
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    e.message = clean_text(body);
    return e;
  }
  e.json = j;
  const nlohmann::json& err = j.contains("error") && j["error"].is_object() ? j["error"] : j;
  e.message = clean_text(json_text(err, "message"));
  if (e.message.empty()) e.message = clean_text(json_text(j, "error"));  // {"error": "text"}
  if (e.message.empty()) e.message = clean_text(j.dump());
  e.type = json_text(err, "type");
  e.code = json_text(err, "code");
  e.status = json_text(err, "status");
  if (e.type == "error") e.type.clear();  // Anthropic's envelope type, not the error's
  return e;
}

AttemptVerdict classify_failure(const HttpResponse& resp, std::time_t now) {
  AttemptVerdict v;
  if (!resp.completed()) {
    v.kind = resp.timed_out ? ErrorKind::timeout : ErrorKind::transport;
    v.retry = resp.transient;
    v.message = (resp.timed_out ? "timeout: " : "transport: ") + resp.transport_error;
    return v;
  }
  ErrorBody e = parse_error_body(resp.body);
  v.message = describe(resp.status, e);
  if (is_quota(resp.status, e)) {
    v.kind = ErrorKind::quota;  // never retried, whatever x-should-retry says
    return v;
  }
  v.kind = kind_for_status(resp.status);
  v.retry = retryable_status(resp.status);
  std::string should = lower(resp.header("x-should-retry"));
  if (should == "true") v.retry = true;
  if (should == "false") v.retry = false;
  if (v.retry) v.hint_s = retry_hint_s(resp, now);
  return v;
}

}  // namespace pkb::models
