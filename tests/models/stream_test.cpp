// Streamed replies (server-sent events) against the loopback server: each wire format's stream assembles to
// the Reply its buffered body gives, while pausing between events for longer in total than the buffered path's
// timeout; broken streams (silence past the idle timeout, a cut connection, an error event, a malformed event)
// are retried; a completed stream is cached and never re-sent.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "fixtures.h"
#include "model_test_util.h"
#include "models/cache.h"
#include "models/dispatch.h"
#include "models/extract.h"

namespace pkb::models {
namespace {

namespace fx = pkb::testing::fixtures;
using json = nlohmann::json;
using pkb::testing::fast_options;
using pkb::testing::json_response;
using pkb::testing::LoopbackServer;
using pkb::testing::ScriptedResponse;
using pkb::testing::seconds_since;
using pkb::testing::sse_event;
using pkb::testing::sse_response;

constexpr double kPause = 0.05;  // between events (seconds)

// Streamed, with a total timeout the paced streams below outlast (so it must not apply to them) and an idle
// timeout well above each pause.
ProviderOptions stream_options(const LoopbackServer& server, const std::string& path = "/v1") {
  ProviderOptions opt = fast_options(server, path);
  opt.stream = true;
  opt.http.total_timeout_s = 0.2;
  opt.http.idle_timeout_s = 0.4;
  opt.http.stream_timeout_s = 10;
  return opt;
}

Request stream_request() {
  Request r;
  r.system = "You write CUDA.";
  r.user = "Write a kernel.";
  r.max_output_tokens = 2048;
  return r;
}

// Cuts text into `n` pieces of about equal size (bytes, so UTF-8 may split: deltas are JSON strings, whole).
std::vector<std::string> pieces(const std::string& text, size_t n) {
  std::vector<std::string> out;
  size_t step = (text.size() + n - 1) / n;
  for (size_t p = 0; p < text.size(); p += step) out.push_back(text.substr(p, step));
  return out;
}

Reply buffered_reply(const std::string& spec, const std::string& path, const std::string& body) {
  LoopbackServer server;
  server.push(json_response(200, body));
  Reply r = make_provider(spec, fast_options(server, path))->complete(stream_request());
  EXPECT_TRUE(r.ok()) << r.error_message;
  EXPECT_FALSE(r.streamed);
  return r;
}

void expect_same_answer(const Reply& streamed, const Reply& buffered) {
  EXPECT_EQ(streamed.text, buffered.text);
  EXPECT_EQ(streamed.reasoning, buffered.reasoning);
  EXPECT_EQ(streamed.finish, buffered.finish);
  EXPECT_EQ(streamed.finish_raw, buffered.finish_raw);
  EXPECT_EQ(streamed.usage.known, buffered.usage.known);
  EXPECT_EQ(streamed.usage.input_tokens, buffered.usage.input_tokens);
  EXPECT_EQ(streamed.usage.output_tokens, buffered.usage.output_tokens);
  EXPECT_EQ(streamed.usage.reasoning_tokens, buffered.usage.reasoning_tokens);
  EXPECT_EQ(streamed.model_reported, buffered.model_reported);
}

// Streams `events` (paced) and checks the reply against the buffered body's, in more time than total_timeout_s.
Reply expect_stream_equals_body(const std::string& spec, const std::string& path,
                                const std::vector<std::string>& events, const std::string& body,
                                LoopbackServer* keep = nullptr) {
  LoopbackServer local;
  LoopbackServer& server = keep ? *keep : local;
  server.push(sse_response(events, kPause));
  ProviderOptions opt = stream_options(server, path);
  EXPECT_GT(kPause * events.size(), opt.http.total_timeout_s) << "the stream must outlast the buffered timeout";
  auto t0 = std::chrono::steady_clock::now();
  Reply streamed = make_provider(spec, opt)->complete(stream_request());
  EXPECT_GT(seconds_since(t0), opt.http.total_timeout_s);
  EXPECT_TRUE(streamed.ok()) << streamed.error_message;
  EXPECT_TRUE(streamed.streamed);
  EXPECT_EQ(streamed.attempts, 1);
  EXPECT_EQ(streamed.broken_streams, 0);
  EXPECT_EQ(server.request_count(), 1);
  expect_same_answer(streamed, buffered_reply(spec, path, body));
  return streamed;
}

json chat_chunk(const json& delta, const json& finish = nullptr, const std::string& model = "gpt-5.4") {
  return {{"id", "chatcmpl-1"},
          {"object", "chat.completion.chunk"},
          {"created", 1741569952},
          {"model", model},
          {"choices", {{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish}}}}};
}

std::vector<std::string> chat_events(const std::string& content, const json& usage, const std::string& model,
                                     const std::string& reasoning_field = "", const std::string& reasoning = "") {
  std::vector<std::string> ev = {
      sse_event("", chat_chunk({{"role", "assistant"}, {"content", ""}}, nullptr, model).dump())};
  for (const auto& r : pieces(reasoning, 3))
    ev.push_back(sse_event("", chat_chunk({{reasoning_field, r}}, nullptr, model).dump()));
  for (const auto& c : pieces(content, 3))
    ev.push_back(sse_event("", chat_chunk({{"content", c}}, nullptr, model).dump()));
  ev.push_back(sse_event("", chat_chunk(json::object(), "stop", model).dump()));
  json last = chat_chunk(json::object(), nullptr, model);
  last["choices"] = json::array();
  last["usage"] = usage;
  ev.push_back(sse_event("", last.dump()));
  ev.push_back(sse_event("", "[DONE]"));
  return ev;
}

std::vector<std::string> openai_chat_events() {
  json buffered = json::parse(fx::kOpenAIChat);
  return chat_events(buffered["choices"][0]["message"]["content"], buffered["usage"], "gpt-5.4");
}

TEST(Streams, OpenAIChatAssemblesTheBufferedReply) {
  LoopbackServer server;
  Reply r = expect_stream_equals_body("openai:gpt-5.4", "/v1", openai_chat_events(), fx::kOpenAIChat, &server);
  EXPECT_EQ(r.text, "Hello! How can I assist you today?");
  EXPECT_EQ(r.usage.input_tokens, 19);
  json body = pkb::testing::body_json(server.last_request());
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_FALSE(r.sent.contains("stream")) << "sent lists what was asked, not how it travelled: " << r.sent.dump();
}

// DeepSeek (OpenAI-compatible): reasoning_content deltas, and ": keep-alive" comments while the model queues.
TEST(Streams, CompatReasoningDeltasAndKeepAliveComments) {
  json buffered = json::parse(fx::kDeepSeekThinking);
  const json& msg = buffered["choices"][0]["message"];
  std::vector<std::string> events =
      chat_events(msg["content"], buffered["usage"], "deepseek-v4-pro", "reasoning_content", msg["reasoning_content"]);
  events.insert(events.begin(), {": keep-alive\n\n", ": keep-alive\n\n"});
  Reply r = expect_stream_equals_body("deepseek:deepseek-v4-pro", "", events, fx::kDeepSeekThinking);
  EXPECT_EQ(r.text, "Hello! How can I help you today?");
  EXPECT_EQ(r.usage.reasoning_tokens, 38);
  EXPECT_NE(r.reasoning.find("helpful assistant"), std::string::npos);
}

std::vector<std::string> responses_events(const json& final_response) {
  json created = final_response;
  created["status"] = "in_progress";
  created["output"] = json::array();
  created.erase("usage");
  std::vector<std::string> ev = {
      sse_event("response.created",
                json{{"type", "response.created"}, {"sequence_number", 0}, {"response", created}}.dump()),
      sse_event("response.output_item.added",
                json{{"type", "response.output_item.added"},
                     {"output_index", 0},
                     {"item", {{"type", "message"}, {"id", "msg_1"}, {"content", json::array()}}}}
                    .dump())};
  for (const auto& d : pieces("The classic tongue twister...", 3))
    ev.push_back(sse_event("response.output_text.delta", json{{"type", "response.output_text.delta"},
                                                              {"item_id", "msg_1"},
                                                              {"output_index", 0},
                                                              {"content_index", 0},
                                                              {"delta", d}}
                                                             .dump()));
  ev.push_back(
      sse_event("response.completed",
                json{{"type", "response.completed"}, {"sequence_number", 9}, {"response", final_response}}.dump()));
  return ev;
}

TEST(Streams, ResponsesAssemblesTheBufferedReply) {
  LoopbackServer server;
  Reply r = expect_stream_equals_body("openai-responses:o1", "/v1", responses_events(json::parse(fx::kResponses)),
                                      fx::kResponses, &server);
  EXPECT_EQ(r.text, "The classic tongue twister...");
  EXPECT_EQ(r.usage.reasoning_tokens, 832);
  EXPECT_EQ(pkb::testing::body_json(server.last_request())["stream"], true);
}

// A terminal event whose response has no output[] (some proxies strip it): the deltas are the answer.
TEST(Streams, ResponsesDeltasStandInForAMissingOutput) {
  json final_response = json::parse(fx::kResponses);
  final_response.erase("output");
  LoopbackServer server;
  server.push(sse_response(responses_events(final_response), 0.01));
  Reply r = make_provider("openai-responses:o1", stream_options(server))->complete(stream_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "The classic tongue twister...");
  EXPECT_EQ(r.finish, FinishReason::stop);
  EXPECT_EQ(r.usage.output_tokens, 1035);
}

TEST(Streams, ResponsesIncompleteIsTruncated) {
  json final_response = json::parse(fx::kResponses);
  final_response["status"] = "incomplete";
  final_response["incomplete_details"] = {{"reason", "max_output_tokens"}};
  std::vector<std::string> events = responses_events(final_response);
  json last = json::parse(events.back().substr(events.back().find("data: ") + 6));
  last["type"] = "response.incomplete";
  events.back() = sse_event("response.incomplete", last.dump());
  expect_stream_equals_body("openai-responses:o1", "/v1", events, final_response.dump());
}

const char* kAnthropicThinking = R"({
  "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
  "content": [
    {"type": "thinking", "thinking": "The user wants a kernel.\nOne block per row.", "signature": "sig"},
    {"type": "text", "text": "Here it is:\n```cuda\n__global__ void k() {}\n```\n"}
  ],
  "stop_reason": "end_turn", "stop_sequence": null,
  "usage": {"input_tokens": 12, "cache_read_input_tokens": 100, "output_tokens": 60}
})";

std::vector<std::string> anthropic_events(const std::string& stop_reason = "end_turn") {
  json b = json::parse(kAnthropicThinking);
  json start = b;
  start["content"] = json::array();
  start["stop_reason"] = nullptr;
  start["usage"] = {{"input_tokens", 12}, {"cache_read_input_tokens", 100}, {"output_tokens", 1}};
  auto ev = [](const std::string& type, json j) {
    j["type"] = type;
    return sse_event(type, j.dump());
  };
  std::vector<std::string> out = {ev("message_start", {{"message", start}})};
  out.push_back(ev("content_block_start", {{"index", 0}, {"content_block", {{"type", "thinking"}, {"thinking", ""}}}}));
  out.push_back(ev("ping", json::object()));
  for (const auto& t : pieces(b["content"][0]["thinking"], 3))
    out.push_back(ev("content_block_delta", {{"index", 0}, {"delta", {{"type", "thinking_delta"}, {"thinking", t}}}}));
  out.push_back(
      ev("content_block_delta", {{"index", 0}, {"delta", {{"type", "signature_delta"}, {"signature", "sig"}}}}));
  out.push_back(ev("content_block_stop", {{"index", 0}}));
  out.push_back(ev("content_block_start", {{"index", 1}, {"content_block", {{"type", "text"}, {"text", ""}}}}));
  for (const auto& t : pieces(b["content"][1]["text"], 3))
    out.push_back(ev("content_block_delta", {{"index", 1}, {"delta", {{"type", "text_delta"}, {"text", t}}}}));
  out.push_back(ev("content_block_stop", {{"index", 1}}));
  out.push_back(ev("message_delta", {{"delta", {{"stop_reason", stop_reason}, {"stop_sequence", nullptr}}},
                                     {"usage", {{"output_tokens", 60}}}}));
  out.push_back(ev("message_stop", json::object()));
  return out;
}

TEST(Streams, AnthropicTextAndThinkingAssembleTheBufferedReply) {
  LoopbackServer server;
  Reply r =
      expect_stream_equals_body("anthropic:claude-sonnet-4-5", "/v1", anthropic_events(), kAnthropicThinking, &server);
  EXPECT_EQ(r.reasoning, "The user wants a kernel.\nOne block per row.");
  EXPECT_EQ(r.usage.input_tokens, 112);  // cache reads count as prompt
  EXPECT_EQ(r.usage.output_tokens, 60);  // the cumulative count of message_delta, not message_start's 1
  EXPECT_EQ(pkb::testing::body_json(server.last_request())["stream"], true);
}

TEST(Streams, AnthropicRefusalStopsAsRefused) {
  json b = json::parse(kAnthropicThinking);
  b["stop_reason"] = "refusal";
  Reply r = expect_stream_equals_body("anthropic:claude-sonnet-4-5", "/v1", anthropic_events("refusal"), b.dump());
  EXPECT_EQ(r.finish, FinishReason::refused);
}

const char* kGeminiThoughts = R"({
  "candidates": [{"content": {"role": "model", "parts": [
      {"text": "Thinking about rows and blocks.", "thought": true},
      {"text": "```cuda\n__global__ void k() {}\n```\nDone."}]},
    "finishReason": "STOP", "index": 0}],
  "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 20, "thoughtsTokenCount": 30, "totalTokenCount": 59},
  "modelVersion": "gemini-2.5-pro"
})";

std::vector<std::string> gemini_events(const std::string& finish) {
  json b = json::parse(kGeminiThoughts);
  auto chunk = [&](const json& part, const std::string& fin, bool final_usage) {
    json c = {
        {"candidates", {{{"content", {{"role", "model"}, {"parts", {part}}}}, {"index", 0}}}},
        {"modelVersion", "gemini-2.5-pro"},
        {"usageMetadata", final_usage ? b["usageMetadata"] : json{{"promptTokenCount", 9}, {"totalTokenCount", 9}}}};
    if (!fin.empty()) c["candidates"][0]["finishReason"] = fin;
    return sse_event("", c.dump());
  };
  std::vector<std::string> out;
  for (const auto& t : pieces(b["candidates"][0]["content"]["parts"][0]["text"], 2))
    out.push_back(chunk({{"text", t}, {"thought", true}}, "", false));
  std::vector<std::string> text = pieces(b["candidates"][0]["content"]["parts"][1]["text"], 3);
  for (size_t i = 0; i < text.size(); ++i)
    out.push_back(chunk({{"text", text[i]}}, i + 1 == text.size() ? finish : "", i + 1 == text.size()));
  return out;
}

TEST(Streams, GeminiChunksAssembleTheBufferedReply) {
  LoopbackServer server;
  Reply r =
      expect_stream_equals_body("gemini:gemini-2.5-pro", "/v1beta", gemini_events("STOP"), kGeminiThoughts, &server);
  EXPECT_EQ(r.reasoning, "Thinking about rows and blocks.");
  EXPECT_EQ(r.usage.output_tokens, 50);  // thoughts are billed as output
  EXPECT_EQ(server.last_request().target, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse");
}

TEST(Streams, GeminiSafetyStopIsRefused) {
  json b = json::parse(kGeminiThoughts);
  b["candidates"][0]["finishReason"] = "SAFETY";
  Reply r = expect_stream_equals_body("gemini:gemini-2.5-pro", "/v1beta", gemini_events("SAFETY"), b.dump());
  EXPECT_EQ(r.finish, FinishReason::refused);
}

// The contrast: the same paced answer, buffered, is cut by the total timeout (and retried from scratch).
TEST(Streams, TheBufferedPathTimesOutWhereTheStreamFlows) {
  LoopbackServer server;
  server.set_fallback(sse_response(openai_chat_events(), kPause));
  ProviderOptions opt = stream_options(server);
  opt.stream = false;
  opt.retry.max_attempts = 2;
  Reply buffered = make_provider("openai:gpt-5.4", opt)->complete(stream_request());
  EXPECT_EQ(buffered.error, ErrorKind::timeout) << buffered.error_message;
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_FALSE(pkb::testing::body_json(server.last_request()).contains("stream"));
  opt.stream = true;
  Reply streamed = make_provider("openai:gpt-5.4", opt)->complete(stream_request());
  EXPECT_TRUE(streamed.ok()) << streamed.error_message;
  EXPECT_EQ(server.request_count(), 3);
}

TEST(Streams, SilencePastTheIdleTimeoutIsRetried) {
  LoopbackServer server;
  ScriptedResponse stalled = sse_response({openai_chat_events()[0], openai_chat_events()[1]}, kPause);
  stalled.hang_s = 5;
  server.push(stalled);
  server.push(sse_response(openai_chat_events(), kPause));
  auto t0 = std::chrono::steady_clock::now();
  Reply r = make_provider("openai:gpt-5.4", stream_options(server))->complete(stream_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "Hello! How can I assist you today?");
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(r.broken_streams, 1) << "the stalled attempt may have been billed";
  EXPECT_LT(seconds_since(t0), 2.5) << "the idle timeout, not the stall, ended the first attempt";
}

TEST(Streams, AStreamThatStaysSilentFailsAsATimeout) {
  LoopbackServer server;
  ScriptedResponse stalled = sse_response({openai_chat_events()[0]}, 0);
  stalled.hang_s = 5;
  server.set_fallback(stalled);
  ProviderOptions opt = stream_options(server);
  opt.retry.max_attempts = 2;
  Reply r = make_provider("openai:gpt-5.4", opt)->complete(stream_request());
  EXPECT_EQ(r.error, ErrorKind::timeout);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(r.broken_streams, 2);
  EXPECT_NE(r.error_message.find("stream broken after 1 events"), std::string::npos) << r.error_message;
  EXPECT_NE(r.error_message.find("idle timeout"), std::string::npos) << r.error_message;
}

TEST(Streams, AStreamCutMidEventIsRetried) {
  LoopbackServer server;
  std::vector<std::string> events = anthropic_events();
  ScriptedResponse cut = sse_response({events[0], events[1], events[3].substr(0, 30)}, kPause);
  cut.cut = true;  // the connection is lost: no final chunk
  server.push(cut);
  server.push(sse_response(events, 0.01));
  ProviderOptions opt = stream_options(server);
  Reply r = make_provider("anthropic:claude-sonnet-4-5", opt)->complete(stream_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.reasoning, "The user wants a kernel.\nOne block per row.");
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_EQ(r.broken_streams, 1);

  // Given up: the message says where the stream broke.
  LoopbackServer again;
  again.set_fallback(cut);
  opt = stream_options(again);
  opt.retry.max_attempts = 2;
  Reply failed = make_provider("anthropic:claude-sonnet-4-5", opt)->complete(stream_request());
  EXPECT_EQ(failed.error, ErrorKind::transport);
  EXPECT_EQ(again.request_count(), 2);
  EXPECT_NE(failed.error_message.find("stream broken after 2 events"), std::string::npos) << failed.error_message;
  EXPECT_NE(failed.error_message.find("mid-event"), std::string::npos) << failed.error_message;
}

// A server that closes cleanly before the terminal event (no finish reason yet) broke the stream too.
TEST(Streams, AStreamEndingBeforeItsFinalEventIsRetried) {
  LoopbackServer server;
  std::vector<std::string> events = gemini_events("STOP");
  server.push(sse_response({events[0], events[1]}, kPause));
  server.push(sse_response(events, 0.01));
  Reply r = make_provider("gemini:gemini-2.5-pro", stream_options(server, "/v1beta"))->complete(stream_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_EQ(r.broken_streams, 1);
  EXPECT_EQ(r.finish_raw, "STOP");
}

// ---- Stop reasons (issue 35 item 4): a reply the provider marks as cut or incomplete is never a success --------

// The finish and raw reason `events` (streamed) and `body` (buffered) both give, and what extraction makes of an
// answer with code that stopped so: a cut one must be `truncated`, never `ok`.
void expect_stop(const std::string& spec, const std::string& path, const std::vector<std::string>& events,
                 const std::string& body, FinishReason finish, const std::string& raw) {
  SCOPED_TRACE(spec + " " + raw);
  Reply r = expect_stream_equals_body(spec, path, events, body);
  EXPECT_EQ(r.finish, finish);
  EXPECT_EQ(r.finish_raw, raw);
  if (finish == FinishReason::length)
    EXPECT_EQ(extract_code(pkb::testing::kCudaAnswer, r.finish).status, CodeStatus::truncated);
}

// The case found by an outside check: response.completed whose response says "incomplete" without any
// incomplete_details was recorded ok with finish other, and the cut fragment became the candidate.
TEST(StopReasons, ResponsesIncompleteWithoutDetailsIsTruncated) {
  json final_response = json::parse(fx::kResponses);
  final_response["status"] = "incomplete";
  expect_stop("openai-responses:o1", "/v1", responses_events(final_response), final_response.dump(),
              FinishReason::length, "incomplete");
  final_response["incomplete_details"] = {{"reason", "a_reason_pkb_does_not_know"}};
  expect_stop("openai-responses:o1", "/v1", responses_events(final_response), final_response.dump(),
              FinishReason::length, "incomplete:a_reason_pkb_does_not_know");
  final_response["incomplete_details"] = {{"reason", "content_filter"}};
  expect_stop("openai-responses:o1", "/v1", responses_events(final_response), final_response.dump(),
              FinishReason::refused, "incomplete:content_filter");
  final_response.erase("incomplete_details");
  final_response["status"] = "cancelled";
  expect_stop("openai-responses:o1", "/v1", responses_events(final_response), final_response.dump(),
              FinishReason::length, "cancelled");
}

// A response.incomplete event whose response object carries no status: the event's name says how it ended.
TEST(StopReasons, ResponsesIncompleteEventWithoutAStatusIsTruncated) {
  json final_response = json::parse(fx::kResponses);
  final_response.erase("status");
  std::vector<std::string> events = responses_events(final_response);
  json last = json::parse(events.back().substr(events.back().find("data: ") + 6));
  last["type"] = "response.incomplete";
  events.back() = sse_event("response.incomplete", last.dump());
  LoopbackServer server;
  server.push(sse_response(events, 0.01));
  Reply r = make_provider("openai-responses:o1", stream_options(server))->complete(stream_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.finish, FinishReason::length);
  EXPECT_EQ(r.finish_raw, "incomplete");
}

// status "failed" without an error object, streamed (response.failed) and buffered: no answer at all.
TEST(StopReasons, ResponsesFailedWithoutDetailsIsAnError) {
  json final_response = json::parse(fx::kResponses);
  final_response["status"] = "failed";
  std::vector<std::string> events = responses_events(final_response);
  json last = json::parse(events.back().substr(events.back().find("data: ") + 6));
  last["type"] = "response.failed";
  events.back() = sse_event("response.failed", last.dump());
  LoopbackServer server;
  server.push(sse_response(events, 0.01));
  server.push(json_response(200, final_response.dump()));
  Reply streamed = make_provider("openai-responses:o1", stream_options(server))->complete(stream_request());
  Reply buffered = make_provider("openai-responses:o1", fast_options(server))->complete(stream_request());
  for (const Reply* r : {&streamed, &buffered}) {
    EXPECT_EQ(r->error, ErrorKind::api_error);
    EXPECT_EQ(r->error_message, "response failed");
    EXPECT_TRUE(r->text.empty());
  }
  EXPECT_EQ(server.request_count(), 2);  // not transient: not retried
}

TEST(StopReasons, ChatCutsAreTruncatedOrRefusedAndAnUnknownReasonIsKeptVerbatim) {
  using pkb::testing::chat_body;
  using pkb::testing::chat_stream_events;
  const std::string answer = pkb::testing::kCudaAnswer;
  expect_stop("openai:gpt-4o", "/v1", chat_stream_events(answer, "length"), chat_body(answer, "length"),
              FinishReason::length, "length");
  expect_stop("vllm:m", "/v1", chat_stream_events(answer, "abort"), chat_body(answer, "abort"), FinishReason::length,
              "abort");
  expect_stop("openai:gpt-4o", "/v1", chat_stream_events(answer, "content_filter"), chat_body(answer, "content_filter"),
              FinishReason::refused, "content_filter");
  expect_stop("vllm:m", "/v1", chat_stream_events(answer, "eos_token"), chat_body(answer, "eos_token"),
              FinishReason::other, "eos_token");
}

TEST(StopReasons, AnthropicCutsAreTruncatedOrRefused) {
  for (const auto& [raw, finish] :
       std::vector<std::pair<std::string, FinishReason>>{{"max_tokens", FinishReason::length},
                                                         {"model_context_window_exceeded", FinishReason::length},
                                                         {"pause_turn", FinishReason::length},
                                                         {"refusal", FinishReason::refused},
                                                         {"a_new_stop_reason", FinishReason::other}}) {
    json b = json::parse(kAnthropicThinking);
    b["stop_reason"] = raw;
    expect_stop("anthropic:claude-sonnet-4-5", "/v1", anthropic_events(raw), b.dump(), finish, raw);
  }
}

TEST(StopReasons, GeminiCutsAreTruncatedOrRefused) {
  for (const auto& [raw, finish] :
       std::vector<std::pair<std::string, FinishReason>>{{"MAX_TOKENS", FinishReason::length},
                                                         {"OTHER", FinishReason::refused},
                                                         {"LANGUAGE", FinishReason::refused},
                                                         {"MALFORMED_FUNCTION_CALL", FinishReason::refused},
                                                         {"A_NEW_FINISH_REASON", FinishReason::other}}) {
    json b = json::parse(kGeminiThoughts);
    b["candidates"][0]["finishReason"] = raw;
    expect_stop("gemini:gemini-2.5-pro", "/v1beta", gemini_events(raw), b.dump(), finish, raw);
  }
}

// The answer is whole once the stop reason arrived: a connection lost after it costs nothing more.
TEST(Streams, AWholeAnswerIsKeptWhenTheConnectionDropsAfterIt) {
  LoopbackServer server;
  std::vector<std::string> events = openai_chat_events();
  events.resize(events.size() - 2);  // no usage chunk, no [DONE]
  ScriptedResponse cut = sse_response(events, 0.01);
  cut.cut = true;
  server.push(cut);
  Reply r = make_provider("openai:gpt-5.4", stream_options(server))->complete(stream_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "Hello! How can I assist you today?");
  EXPECT_EQ(r.finish, FinishReason::stop);
  EXPECT_FALSE(r.usage.known);
  EXPECT_EQ(server.request_count(), 1);
}

TEST(Streams, AnthropicOverloadedErrorEventIsRetriedWithItsMessage) {
  LoopbackServer server;
  std::vector<std::string> events = anthropic_events();
  std::string overloaded = sse_event("error", json::parse(fx::kAnthropicOverloaded).dump());
  server.push(sse_response({events[0], events[1], overloaded}, kPause));
  server.push(sse_response(events, 0.01));
  Reply r = make_provider("anthropic:claude-sonnet-4-5", stream_options(server))->complete(stream_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_EQ(r.broken_streams, 1);

  LoopbackServer always;
  always.set_fallback(sse_response({events[0], overloaded}, 0.01));
  ProviderOptions opt = stream_options(always);
  opt.retry.max_attempts = 2;
  Reply failed = make_provider("anthropic:claude-sonnet-4-5", opt)->complete(stream_request());
  EXPECT_EQ(failed.error, ErrorKind::server);
  EXPECT_EQ(failed.error_message, "stream error event: overloaded_error: Overloaded");
  EXPECT_EQ(always.request_count(), 2);
}

TEST(Streams, AnInvalidRequestErrorEventIsNotRetried) {
  LoopbackServer server;
  std::string error = sse_event(
      "error",
      R"({"type":"error","code":"invalid_prompt","message":"Invalid prompt: flagged.","param":null,"sequence_number":1})");
  server.set_fallback(sse_response({responses_events(json::parse(fx::kResponses))[0], error}, 0.01));
  Reply r = make_provider("openai-responses:o1", stream_options(server))->complete(stream_request());
  EXPECT_EQ(r.error, ErrorKind::bad_request);
  EXPECT_EQ(r.error_message, "stream error event: invalid_prompt: Invalid prompt: flagged.");
  EXPECT_EQ(server.request_count(), 1);
}

TEST(Streams, AGeminiErrorChunkIsReportedWithItsStatus) {
  LoopbackServer server;
  std::vector<std::string> events = gemini_events("STOP");
  std::string error =
      sse_event("", R"({"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}})");
  server.set_fallback(sse_response({events[0], error}, 0.01));
  ProviderOptions opt = stream_options(server, "/v1beta");
  opt.retry.max_attempts = 2;
  Reply r = make_provider("gemini:gemini-2.5-pro", opt)->complete(stream_request());
  EXPECT_EQ(r.error, ErrorKind::server);
  EXPECT_EQ(r.error_message, "stream error event: UNAVAILABLE: The model is overloaded.");
  EXPECT_EQ(server.request_count(), 2);
}

TEST(Streams, AMalformedEventIsABadResponseAndRetried) {
  LoopbackServer server;
  server.push(sse_response({openai_chat_events()[0], "data: {\"choices\": [tru\n\n"}, 0.01));
  server.push(sse_response(openai_chat_events(), 0.01));
  Reply r = make_provider("openai:gpt-5.4", stream_options(server))->complete(stream_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(server.request_count(), 2);

  LoopbackServer always;
  always.set_fallback(sse_response({"data: {\"choices\": [tru\n\n"}, 0.01));
  ProviderOptions opt = stream_options(always);
  opt.retry.max_attempts = 1;
  Reply failed = make_provider("openai:gpt-5.4", opt)->complete(stream_request());
  EXPECT_EQ(failed.error, ErrorKind::bad_response);
  EXPECT_EQ(failed.error_message, "malformed stream event: {\"choices\": [tru");
}

// Before the stream starts, an HTTP error is the buffered path's: the same classes, messages and waits.
TEST(Streams, AnHttpErrorBeforeTheStreamIsHandledAsBuffered) {
  LoopbackServer server;
  ScriptedResponse limited = json_response(429, R"({"error":{"message":"slow down","type":"rate_limit_error"}})");
  limited.headers.push_back({"retry-after-ms", "150"});
  server.push(limited);
  server.push(sse_response(anthropic_events(), 0.01));
  auto t0 = std::chrono::steady_clock::now();
  Reply r = make_provider("anthropic:claude-sonnet-4-5", stream_options(server))->complete(stream_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_GE(seconds_since(t0), 0.15);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(r.broken_streams, 0) << "no stream had started";

  LoopbackServer denied;
  denied.set_fallback(
      json_response(401, R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})"));
  Reply auth = make_provider("anthropic:claude-sonnet-4-5", stream_options(denied))->complete(stream_request());
  EXPECT_EQ(auth.error, ErrorKind::auth);
  EXPECT_EQ(auth.error_message, "HTTP 401 authentication_error: invalid x-api-key");
  EXPECT_EQ(denied.request_count(), 1);
  EXPECT_FALSE(auth.streamed);
}

TEST(Streams, ARefusedConnectionIsATransportFailureAsBuffered) {
  LoopbackServer server;  // only for the options; the URL points elsewhere
  ProviderOptions opt = stream_options(server);
  opt.base_url = "http://127.0.0.1:" + std::to_string(pkb::testing::unused_port()) + "/v1";
  Reply r = make_provider("openai:gpt-5.4", opt)->complete(stream_request());
  EXPECT_EQ(r.error, ErrorKind::transport);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.broken_streams, 0);
  EXPECT_NE(r.error_message.find("transport: "), std::string::npos) << r.error_message;
}

// An endpoint that ignores the stream flag answers with one JSON body: read as such.
TEST(Streams, AServerThatIgnoresTheStreamFlagStillAnswers) {
  LoopbackServer server;
  server.push(json_response(200, fx::kOpenAIChat));
  Reply r = make_provider("openai:gpt-5.4", stream_options(server))->complete(stream_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "Hello! How can I assist you today?");
  EXPECT_FALSE(r.streamed);
}

TEST(Streams, OnlyACompletedStreamIsCachedAndTheCacheAnswersWithoutARequest) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "pkb-stream-XXXXXX").string();
  std::filesystem::path dir = ::mkdtemp(tmpl.data());
  {
    ReplyCache cache(dir);
    LoopbackServer server;
    ScriptedResponse cut = sse_response({openai_chat_events()[0], openai_chat_events()[1]}, 0.01);
    cut.cut = true;
    server.push(cut);
    server.push(sse_response(openai_chat_events(), 0.01));
    ProviderOptions opt = stream_options(server);
    opt.retry.max_attempts = 1;
    auto p = make_provider("openai:gpt-5.4", opt);
    Reply broken = complete_cached(*p, &cache, stream_request());
    EXPECT_EQ(broken.error, ErrorKind::transport);
    EXPECT_FALSE(cache.load(p->name(), stream_request())) << "a broken stream must not be cached";

    Reply first = complete_cached(*p, &cache, stream_request());
    ASSERT_TRUE(first.ok()) << first.error_message;
    EXPECT_EQ(server.request_count(), 2);
    Reply second = complete_cached(*p, &cache, stream_request());
    EXPECT_EQ(server.request_count(), 2) << "the cached stream was sent again";
    EXPECT_TRUE(second.from_cache);
    EXPECT_TRUE(second.streamed);
    EXPECT_EQ(second.text, first.text);
    EXPECT_EQ(second.usage.input_tokens, first.usage.input_tokens);
  }
  std::filesystem::remove_all(dir);
}

// --no-stream: no stream field (or streaming endpoint) in any wire format.
TEST(Streams, NoStreamSendsNoStreamField) {
  struct Case {
    std::string spec, path, body, target;
  };
  for (const Case& c :
       {Case{"openai:gpt-5.4", "/v1", fx::kOpenAIChat, "/v1/chat/completions"},
        Case{"vllm:any", "/v1", fx::kOpenAIChat, "/v1/chat/completions"},
        Case{"openai-responses:o1", "/v1", fx::kResponses, "/v1/responses"},
        Case{"anthropic:claude-sonnet-4-5", "/v1", fx::kAnthropic, "/v1/messages"},
        Case{"gemini:gemini-2.5-pro", "/v1beta", fx::kGemini, "/v1beta/models/gemini-2.5-pro:generateContent"}}) {
    LoopbackServer server;
    server.push(json_response(200, c.body));
    ProviderOptions opt = stream_options(server, c.path);
    opt.stream = false;
    opt.http.total_timeout_s = 5;
    Reply r = make_provider(c.spec, opt)->complete(stream_request());
    EXPECT_TRUE(r.ok()) << c.spec << ": " << r.error_message;
    auto req = server.last_request();
    EXPECT_EQ(req.target, c.target) << c.spec;
    json body = pkb::testing::body_json(req);
    EXPECT_FALSE(body.contains("stream")) << c.spec;
    EXPECT_FALSE(body.contains("stream_options")) << c.spec;
  }
}

}  // namespace
}  // namespace pkb::models

namespace pkb::models {
namespace {

// A faulty or hostile server that sends far more than any answer, buffered or as an endless event stream: the
// transfer is cut at HttpOptions::max_response_bytes (the driver's memory is not the server's to fill), the
// failure says why, and the request is not sent again.
TEST(Streams, AFloodIsCutAtTheResponseCapAndNotAskedAgain) {
  for (bool stream : {false, true}) {
    LoopbackServer server;
    if (stream) {
      std::vector<std::string> events = pkb::testing::chat_stream_events(std::string(400000, 'x'));
      events.pop_back();  // no [DONE]: endless, as far as the client can tell
      server.set_fallback(sse_response(events, 0));
    } else {
      server.set_fallback(json_response(200, pkb::testing::chat_body(std::string(400000, 'x'))));
    }
    ProviderOptions opt = stream_options(server);
    opt.stream = stream;
    opt.http.total_timeout_s = 5;
    opt.http.max_response_bytes = 64 << 10;
    Reply r = make_provider("openai:gpt-4o", opt)->complete(stream_request());
    EXPECT_EQ(r.error, ErrorKind::bad_response) << stream;
    EXPECT_NE(r.error_message.find("passed 65536 bytes"), std::string::npos) << r.error_message;
    EXPECT_EQ(server.request_count(), 1) << stream;
  }
}

}  // namespace
}  // namespace pkb::models
