// A language-model endpoint behind one interface. make_provider() resolves the base URL (option, then
// PKB_<PROVIDER>_BASE_URL, then the preset) and the API key (option, then the provider's env vars); the key
// stays inside the provider: it is redacted from every error message and never logged.
// Requests stream by default (server-sent events, HttpOptions::idle_timeout_s between bytes): a long answer that
// keeps flowing is never cut by a total timeout, and a stream that completed is never re-sent. A stream that
// breaks (reset, idle, an error event) or an HTTP error before it starts is retried per RetryPolicy.
// Known limits: rate-limit headers (x-ratelimit-remaining-*) are not used to pace requests, only 429s are; a
// retried attempt (a broken stream, a timed-out buffered request) can be billed twice, since none of these
// APIs takes an idempotency key (Reply::broken_streams counts them); a server that ignores the stream flag and
// stays silent longer than the idle timeout needs stream = false.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "models/http.h"
#include "models/model_name.h"
#include "models/retry.h"
#include "models/types.h"

namespace pkb::models {

struct ProviderOptions {
  std::optional<std::string> base_url;  ///< overrides PKB_<PROVIDER>_BASE_URL and the preset
  std::optional<std::string> api_key;   ///< overrides the environment; "" forces no key
  HttpOptions http;
  RetryPolicy retry;
  bool stream = true;  ///< false: one buffered body per attempt, for endpoints that cannot stream (--no-stream)
};

class Provider {
 public:
  virtual ~Provider() = default;
  /// Sends one request, retrying per RetryPolicy. Thread-safe. Transport and API failures come back in
  /// Reply::error; nothing is thrown for them.
  virtual Reply complete(const Request& req) = 0;
  /// Resolved name: base_url is the effective one.
  virtual const ModelName& name() const = 0;
};

/// Throws pkb::Error when a hosted provider has no API key.
std::unique_ptr<Provider> make_provider(const ModelName& name, const ProviderOptions& opt = {});
/// Convenience: parse_model_name(spec) then the above.
std::unique_ptr<Provider> make_provider(std::string_view spec, const ProviderOptions& opt = {});

}  // namespace pkb::models
