// Wire formats: how each API wants a Request and how it shapes a successful reply (research/llm_apis.md
// §1-5). Pure code, no I/O, so fixtures from the docs test it directly; Provider (provider.h) adds HTTP and
// retries on top. One WireFormat per Api; adding a provider that speaks an existing format is one preset row
// in model_name.cpp.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "models/http.h"
#include "models/model_name.h"
#include "models/retry.h"
#include "models/types.h"

namespace pkb::models {

class WireFormat {
 public:
  virtual ~WireFormat() = default;
  /// URL, headers (auth included when api_key is non-empty) and JSON body; Request::extra merged last.
  virtual HttpRequest build(const ModelName& name, const std::string& api_key, const Request& req) const = 0;
  /// Fills text, reasoning, finish, usage and model_reported from a 2xx body. A body that is not JSON or lacks
  /// the expected structure gives bad_response; a body reporting failure gives api_error (maybe retryable).
  virtual Verdict parse(const nlohmann::json& body, Reply& reply) const = 0;
};

std::unique_ptr<WireFormat> make_wire_format(Api api);

/// Parses a 2xx body for `api`; adds the generic checks (valid JSON, <think> splitting).
Verdict parse_success(const WireFormat& wire, std::string_view body, Reply& reply);

/// o-series and GPT-5 reasoning models: reject non-default temperature and the legacy max_tokens.
bool openai_is_reasoning_model(std::string_view model);
/// Newest Claude models (Opus 4.7+, Opus/Sonnet 5) return 400 when sampling parameters are sent.
bool anthropic_rejects_temperature(std::string_view model);

}  // namespace pkb::models
