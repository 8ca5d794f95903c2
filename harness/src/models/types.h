// What the model client sends and gets back, independent of provider. A Reply is a record: transport and
// API failures are described in it (error, error_message), never thrown, so a batch keeps going.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pkb::models {

/// One earlier turn of a conversation: what the user said and what the model answered (multi-turn refinement).
struct Exchange {
  std::string user, assistant;
};

/// A function the model may call (agent mode): name, what it does, and its argument as a JSON schema.
struct ToolSpec {
  std::string name, description;
  nlohmann::json parameters = nlohmann::json::object();  ///< JSON schema of the arguments object
};

/// One tool call in a reply. `arguments` is the provider's text as received (JSON when the model wrote valid JSON,
/// anything otherwise): the caller decides what malformed arguments mean.
struct ToolCall {
  std::string id;         ///< provider's call id (OpenAI call_id, Anthropic tool_use id); synthesized for Gemini
  std::string name;       ///< the function called
  std::string arguments;  ///< raw JSON text of the arguments object
  std::string signature;  ///< Gemini's opaque thoughtSignature, sent back with the call; "" elsewhere
};

/// The answer to one tool call, as the model reads it.
struct ToolResult {
  std::string call_id, name;
  std::string content;
  bool is_error = false;  ///< the call was refused (bad arguments, unknown tool): Anthropic's is_error
};

/// One message of an agent conversation after the first user prompt: the model's turn (text and tool calls), the
/// results of its tool calls, or a plain user message (a nudge after an empty reply).
struct Message {
  enum class Role { user, assistant, tool };
  Role role = Role::user;
  std::string text;                      ///< user or assistant text
  std::vector<ToolCall> tool_calls;      ///< assistant: the calls it made
  std::vector<ToolResult> tool_results;  ///< tool: one result per call of the preceding assistant message
};

struct Request {
  std::string system;                 ///< system / developer instructions; empty = none sent
  std::vector<Exchange> history;      ///< earlier turns, oldest first, sent before `user`; empty = one turn
  std::string user;                   ///< the user prompt (the latest turn's; an agent's first)
  std::vector<Message> conversation;  ///< agent mode: the messages after `user`, oldest first; empty = none
  std::vector<ToolSpec> tools;        ///< functions the model may call; empty = no tools sent
  int max_output_tokens = 32768;      ///< cap on generated tokens, reasoning included (tokens)
  std::optional<double> temperature;  ///< unset = provider default; dropped for models that reject it
  int sample_index = 0;               ///< distinguishes repeated samples of one prompt (cache key only)
  /// Merged into the provider's JSON body with RFC 7386 merge-patch semantics, last, so it can add
  /// (reasoning_effort, thinking, generationConfig.thinkingConfig, ...), override, or delete (null) fields.
  nlohmann::json extra = nlohmann::json::object();
};

/// Why generation stopped, normalized across providers; Reply::finish_raw keeps the provider's word verbatim
/// ("end_turn", "MAX_TOKENS", "incomplete:max_output_tokens", "incomplete" without a reason, "eos_token", ...).
/// The rule (docs/models.md "Stop reasons"): only a reason the provider documents as a normal end is stop; any
/// reply the provider marks as cut or incomplete is length or refused, never a success.
///   stop:    the answer ended normally (OpenAI stop, Responses status completed, Anthropic end_turn/stop_sequence,
///            Gemini STOP).
///   length:  cut before its end: the token cap or context window, or marked incomplete or unfinished (OpenAI
///            length, Responses status incomplete with any reason but content_filter or with none, cancelled,
///            in_progress, queued; Anthropic max_tokens, model_context_window_exceeded, pause_turn; Gemini
///            MAX_TOKENS; vLLM abort). Extraction calls such an answer truncated.
///   refused: the provider cut the answer off or withheld it for a reason other than length (OpenAI
///            content_filter and refusal, Responses incomplete:content_filter, Anthropic refusal, Gemini
///            SAFETY, RECITATION, OTHER, LANGUAGE, ... or a blocked prompt).
///   other:   a reason none of the above documents, or no reason at all (tool_calls, tool_use, a new value, a
///            server that sends none): the answer is kept, but pkb generate flags it (the record's message, a
///            warning on stderr) rather than letting it pass as a normal end.
enum class FinishReason { stop, length, refused, other };

/// Failure class of a request. `none` means the reply carries a real answer (possibly empty or truncated).
enum class ErrorKind {
  none,
  transport,     ///< connection refused/reset, DNS, empty reply, a stream cut before its end
  timeout,       ///< connect, total or (streamed) idle timeout
  rate_limited,  ///< 429 still failing after the last attempt
  quota,         ///< out of credit / spend limit / daily quota: never retried
  auth,          ///< 401, 403
  bad_request,   ///< other 4xx: fix the request (or, when every problem gets it, the configuration)
  server,        ///< 5xx / 529 still failing after the last attempt
  bad_response,  ///< 2xx whose body is not the expected JSON
  api_error,     ///< 2xx whose body reports a failure (Responses API status "failed")
  not_sent,      ///< never sent: an earlier request of the batch failed in a way every request would (auth, ...)
};

/// Failures that every other request of a batch would hit too (bad key, no credit): sending the rest only burns
/// time and quota, so a batch stops at the first one. A 400 is not one of them: it is usually about its request
/// (models::BatchStop stops on the same 400 for two problems).
bool stops_batch(ErrorKind k);

const char* finish_reason_name(FinishReason r);
std::optional<FinishReason> finish_reason_from_name(const std::string& s);
const char* error_kind_name(ErrorKind k);
std::optional<ErrorKind> error_kind_from_name(const std::string& s);

struct Usage {
  bool known = false;            ///< false when the provider reported no usage
  int64_t input_tokens = 0;      ///< all prompt tokens, cached ones included (tokens)
  int64_t output_tokens = 0;     ///< all generated tokens, reasoning included: what output is billed on
  int64_t reasoning_tokens = 0;  ///< the reasoning part of output_tokens (0 if not reported)
};

struct Reply {
  std::string text;                  ///< the answer, reasoning excluded; kept verbatim otherwise (the raw text)
  std::vector<ToolCall> tool_calls;  ///< the functions the model called, in its order (several: parallel calls)
  std::string reasoning;             ///< reasoning text the provider returned (fields, thinking blocks, <think>)
  FinishReason finish = FinishReason::other;
  std::string finish_raw;  ///< provider's own stop value, e.g. "end_turn", "MAX_TOKENS", "incomplete:..."
  Usage usage;
  std::string model_reported;  ///< model/snapshot name the API says served the request
  std::string request_id;      ///< x-request-id / request-id header, for support tickets
  double latency_s = 0;        ///< wall time of complete(), all attempts and back-off included (seconds)
  int attempts = 0;            ///< HTTP attempts made (0 for a cache hit)
  long http_status = 0;        ///< status of the last attempt; 0 if no HTTP response arrived
  ErrorKind error = ErrorKind::none;
  std::string error_message;  ///< one line, API keys redacted
  bool from_cache = false;
  bool streamed = false;  ///< the answer arrived as server-sent events (false: one buffered body)
  /// Attempts whose stream had started (HTTP 2xx, events flowing) and then broke (cut, idle, an error event):
  /// the next attempt starts from scratch, and the provider may bill each broken one as well as the answer.
  int broken_streams = 0;
  /// The parameters actually sent (the body without the prompt texts): a temperature the model rejects and
  /// pkb therefore dropped is absent here. null when nothing was sent.
  nlohmann::json sent;

  bool ok() const { return error == ErrorKind::none; }
};

nlohmann::json to_json(const Request& r);  ///< "history", "conversation", "tools" only when there are some
nlohmann::json history_json(const std::vector<Exchange>& history);
nlohmann::json tools_json(const std::vector<ToolSpec>& tools);
nlohmann::json tool_calls_json(const std::vector<ToolCall>& calls);
std::vector<ToolCall> tool_calls_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception
nlohmann::json conversation_json(const std::vector<Message>& conversation);
std::vector<Message> conversation_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception
nlohmann::json to_json(const Reply& r);
Reply reply_from_json(const nlohmann::json& j);  // throws nlohmann::json::exception on a malformed record

}  // namespace pkb::models
