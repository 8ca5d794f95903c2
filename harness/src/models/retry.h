// Deciding what a failed HTTP attempt means and how long to wait before the next one. Pure functions over
// HttpResponse so every rule is unit-testable without a server. Policy (the providers' documented error codes):
// retry transport failures/timeouts, 408, 409, 429 and 5xx (incl. Anthropic 529); never retry quota/billing
// exhaustion or other 4xx; wait what the server asks (retry-after-ms, Retry-After, Gemini RetryInfo) capped
// at max_hint_s, else exponential back-off with jitter.
#pragma once

#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "models/http.h"
#include "models/types.h"

namespace pkb::models {

struct RetryPolicy {
  int max_attempts = 6;     ///< attempts in total, the first included
  double base_delay_s = 2;  ///< back-off before the first retry, doubled per retry (seconds)
  double max_delay_s = 60;  ///< cap on computed back-off (seconds)
  double max_hint_s = 120;  ///< cap on a server-requested wait; longer requests are waited this long (seconds)
};

/// "26s", "1.5s", "250ms" (Gemini retryDelay, Go durations without compound units) -> seconds.
std::optional<double> parse_duration_s(std::string_view s);
/// Retry-After value: delta-seconds (integer or fraction) or an IMF-fixdate HTTP-date relative to `now`.
std::optional<double> parse_retry_after(std::string_view value, std::time_t now);
/// The server's requested wait, if any: retry-after-ms, then Retry-After, then Gemini RetryInfo in the body.
std::optional<double> retry_hint_s(const HttpResponse& resp, std::time_t now);

/// Wait before retry number `retry_index` (0 = first retry). With a hint: min(hint, max_hint_s). Otherwise
/// min(max_delay_s, base * 2^k) scaled by a jitter factor in [0.5, 1) from `unit_random` in [0, 1).
double backoff_delay_s(const RetryPolicy& p, int retry_index, std::optional<double> hint_s, double unit_random);

/// Error fields from any provider's error body; the body is not trusted to be JSON.
struct ErrorBody {
  std::string message;  ///< one cleaned line; HTML reduced to its title/text
  std::string type;     ///< error.type (OpenAI, Anthropic, flat vLLM/SGLang)
  std::string code;     ///< error.code as text (string or integer in the wild)
  std::string status;   ///< Google canonical status, e.g. RESOURCE_EXHAUSTED
  nlohmann::json json;  ///< parsed body, or null if it was not JSON
};
ErrorBody parse_error_body(std::string_view body);

/// Collapses whitespace, reduces HTML to its <title> (or its text), trims, and cuts at max_len characters.
std::string clean_text(std::string_view text, size_t max_len = 300);

// What one attempt (an HTTP response, a stream event) means: its error kind, whether to retry, the server's hint.
struct AttemptVerdict {
  ErrorKind kind = ErrorKind::none;
  bool retry = false;
  std::string message;
  std::optional<double> hint_s;
};

/// Classifies a transport failure or a non-2xx response.
AttemptVerdict classify_failure(const HttpResponse& resp, std::time_t now);

}  // namespace pkb::models
