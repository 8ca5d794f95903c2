// Helpers shared by the wire-format implementations; not part of the public API.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "models/wire.h"

namespace pkb::models::detail {

using nlohmann::json;

/// j[key] if it is a string, else "" (fields are often null or absent).
std::string str(const json& j, const char* key);
/// j[key] if it is an integer, else 0 (proto3 JSON omits zeros).
int64_t i64(const json& j, const char* key);
/// j[key] if it is an object/array, else an empty one of the same kind.
const json& obj(const json& j, const char* key);
const json& arr(const json& j, const char* key);

/// Appends with a blank line between pieces.
void append_para(std::string& to, const std::string& piece);

/// A tool call's arguments as the object an API wants sent back (Anthropic input, Gemini args): the parsed text
/// when it is a JSON object, else {} (the model's malformed text stays in the transcript and its tool error).
json arguments_object(const std::string& arguments);

/// Body as JSON with Request::extra merged last; headers start with Content-Type.
HttpRequest make_json_request(std::string url, json body, const Request& req);

AttemptVerdict bad_response(const std::string& what);

/// A stream event's data parsed into `j`; false with `bad` set (a malformed event) when it is not a JSON object.
bool parse_event(const SseEvent& e, json& j, AttemptVerdict& bad);
/// The event's type: the JSON's "type", else the SSE event name (Anthropic and Responses send both).
std::string event_type(const json& j, const SseEvent& e);

std::unique_ptr<WireFormat> make_openai_chat(bool compat);
std::unique_ptr<WireFormat> make_openai_responses();
std::unique_ptr<WireFormat> make_anthropic();
std::unique_ptr<WireFormat> make_gemini();

}  // namespace pkb::models::detail
