// Wire formats: how each API wants a Request and how it shapes a successful reply (the providers' public API
// references: OpenAI Chat Completions and Responses, Anthropic Messages, Gemini generateContent). Pure code, no I/O, so
// fixtures from the docs test it directly; Provider (provider.h) adds HTTP and retries on top. One WireFormat per Api;
// adding a provider that speaks an existing format is one preset row in model_name.cpp. Streaming: a StreamAssembler
// folds a reply's server-sent events back into the body the non-streaming API would have returned, and parse() reads
// that body, so a streamed answer and a buffered one become the same Reply through one parser.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "models/http.h"
#include "models/model_name.h"
#include "models/retry.h"
#include "models/sse.h"
#include "models/types.h"

namespace pkb::models {

/// The events of one streamed reply, in order. One per attempt.
class StreamAssembler {
 public:
  virtual ~StreamAssembler() = default;
  /// Takes one event. A verdict other than none (the provider's error event, a malformed event) ends the
  /// attempt with that failure.
  virtual AttemptVerdict on_event(const SseEvent& e) = 0;
  /// The terminal event arrived ([DONE], message_stop, response.completed, ...): nothing more to read.
  virtual bool finished() const = 0;
  /// The answer is whole (its stop reason arrived), even if the connection then breaks before the terminal
  /// event: such a reply is kept, never re-sent.
  virtual bool complete() const = 0;
  /// The equivalent non-streamed body, for WireFormat::parse.
  virtual nlohmann::json body() const = 0;
};

class WireFormat {
 public:
  virtual ~WireFormat() = default;
  /// URL, headers (auth included when api_key is non-empty) and JSON body; Request::extra merged last.
  /// `stream` asks for server-sent events (a stream flag in the body, or Gemini's streaming endpoint).
  virtual HttpRequest build(const ModelName& name, const std::string& api_key, const Request& req,
                            bool stream = false) const = 0;
  virtual std::unique_ptr<StreamAssembler> assembler() const = 0;
  /// Fills text, reasoning, finish, usage and model_reported from a 2xx body. A body that is not JSON or lacks
  /// the expected structure gives bad_response; a body reporting failure gives api_error (maybe retryable).
  virtual AttemptVerdict parse(const nlohmann::json& body, Reply& reply) const = 0;
};

std::unique_ptr<WireFormat> make_wire_format(Api api);

/// Parses a 2xx body for `api`; adds the generic checks (valid JSON, <think> splitting).
AttemptVerdict parse_success(const WireFormat& wire, std::string_view body, Reply& reply);
/// The same for a body already parsed: the one a StreamAssembler put together.
AttemptVerdict parse_assembled(const WireFormat& wire, const nlohmann::json& body, Reply& reply);

/// A provider's error event inside a stream (Anthropic overloaded_error, a Responses "error", an OpenAI or
/// Gemini error object), by its type/code/status label: overloaded, server and rate-limit errors are
/// retried, quota and request errors are not, unknown ones are retried (the stream broke on the server).
AttemptVerdict stream_error_verdict(std::string_view event_data);

/// o-series and GPT-5 reasoning models: reject non-default temperature and the legacy max_tokens.
bool openai_is_reasoning_model(std::string_view model);
/// Newest Claude models (Opus 4.7+, Opus/Sonnet 5) return 400 when sampling parameters are sent.
bool anthropic_rejects_temperature(std::string_view model);

}  // namespace pkb::models
