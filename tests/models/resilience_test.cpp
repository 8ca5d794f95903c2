// Retries, back-off, timeouts and broken servers, over real sockets.
#include <gtest/gtest.h>

#include <chrono>

#include "fixtures.h"
#include "model_test_util.h"
#include "models/extract.h"
#include "models/provider.h"

namespace pkb::models {
namespace {

namespace fx = pkb::testing::fixtures;
using pkb::testing::chat_body;
using pkb::testing::fast_options;
using pkb::testing::json_response;
using pkb::testing::LoopbackServer;
using pkb::testing::ScriptedResponse;
using pkb::testing::seconds_since;

Request minimal_request() {
  Request r;
  r.user = "Write a kernel.";
  return r;
}

TEST(Retry, RetryAfterSecondsIsHonoured) {
  LoopbackServer server;
  ScriptedResponse limited = json_response(
      429, R"({"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}})");
  limited.headers.push_back({"Retry-After", "1"});
  server.push(limited);
  server.push(json_response(200, chat_body("ok")));
  auto t0 = std::chrono::steady_clock::now();
  Reply r = make_provider("openai:gpt-4o", fast_options(server))->complete(minimal_request());
  double elapsed = seconds_since(t0);
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "ok");
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_GE(elapsed, 1.0);  // the back-off alone would have been ~0.01 s
  EXPECT_LT(elapsed, 3.0);
  EXPECT_GE(r.latency_s, 1.0);
}

TEST(Retry, RetryAfterMsIsHonoured) {
  LoopbackServer server;
  ScriptedResponse limited = json_response(429, "{}");
  limited.headers.push_back({"retry-after-ms", "400"});
  server.push(limited);
  server.push(json_response(200, chat_body("ok")));
  auto t0 = std::chrono::steady_clock::now();
  Reply r = make_provider("openai:gpt-4o", fast_options(server))->complete(minimal_request());
  EXPECT_TRUE(r.ok());
  EXPECT_GE(seconds_since(t0), 0.4);
  EXPECT_EQ(server.request_count(), 2);
}

TEST(Retry, GeminiRetryDelayInTheBodyIsHonoured) {
  LoopbackServer server;
  server.push(json_response(429, fx::kGemini429RetryInfo));
  server.push(json_response(200, fx::kGemini));
  auto t0 = std::chrono::steady_clock::now();
  Reply r = make_provider("gemini:gemini-3-pro-preview", fast_options(server, "/v1beta"))->complete(minimal_request());
  EXPECT_TRUE(r.ok()) << r.error_message;
  EXPECT_GE(seconds_since(t0), 0.4);
  EXPECT_EQ(server.request_count(), 2);
}

TEST(Retry, ServerErrorThenSuccess) {
  LoopbackServer server;
  server.push(json_response(
      500, R"({"error":{"message":"The server had an error while processing your request.","type":"server_error"}})"));
  server.push(json_response(200, chat_body("ok")));
  Reply r = make_provider("openai:gpt-4o", fast_options(server))->complete(minimal_request());
  EXPECT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.error_message, "");  // the failed attempt leaves no trace in the final reply
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(server.request_count(), 2);
}

TEST(Retry, AnthropicOverloaded529ThenSuccess) {
  LoopbackServer server;
  server.push(json_response(529, fx::kAnthropicOverloaded));
  server.push(json_response(200, fx::kAnthropic));
  Reply r = make_provider("anthropic:claude-opus-4-7", fast_options(server))->complete(minimal_request());
  EXPECT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "Hello!");
  EXPECT_EQ(server.request_count(), 2);
}

TEST(Retry, PersistentFailureGivesUpAfterMaxAttempts) {
  LoopbackServer server;
  server.set_fallback(
      json_response(503, R"({"error":{"message":"The engine is currently overloaded","type":"server_error"}})"));
  Reply r = make_provider("openai:gpt-4o", fast_options(server))->complete(minimal_request());
  EXPECT_EQ(r.error, ErrorKind::server);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(server.request_count(), 3);
  EXPECT_EQ(r.http_status, 503);
}

TEST(Retry, InsufficientQuotaIsNotRetried) {
  LoopbackServer server;
  server.set_fallback(json_response(429, fx::kOpenAIInsufficientQuota));
  Reply r = make_provider("openai:gpt-5.5", fast_options(server))->complete(minimal_request());
  EXPECT_EQ(r.error, ErrorKind::quota);
  EXPECT_EQ(server.request_count(), 1);
  EXPECT_EQ(r.attempts, 1);
}

TEST(Retry, AnthropicBillingErrorIsNotRetried) {
  LoopbackServer server;
  server.set_fallback(json_response(
      402,
      R"({"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low to access the Anthropic API."}})"));
  Reply r = make_provider("anthropic:claude-opus-4-7", fast_options(server))->complete(minimal_request());
  EXPECT_EQ(r.error, ErrorKind::quota);
  EXPECT_EQ(server.request_count(), 1);
}

TEST(Retry, HtmlErrorPageGivesACleanMessage) {
  LoopbackServer server;
  ScriptedResponse html;
  html.status = 502;
  html.headers = {{"Content-Type", "text/html"}};
  html.body =
      "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
      "</center>\r\n<hr><center>cloudflare</center>\r\n</body>\r\n</html>\r\n";
  server.set_fallback(html);
  Reply r = make_provider("openai:gpt-4o", fast_options(server))->complete(minimal_request());
  EXPECT_EQ(r.error, ErrorKind::server);
  EXPECT_EQ(r.error_message, "HTTP 502: 502 Bad Gateway");
  EXPECT_EQ(server.request_count(), 3);  // 502 is retried
}

TEST(Retry, CloudflareIntegerCodeIsRetried) {
  LoopbackServer server;
  server.push(json_response(502, fx::kCloudflare502));
  server.push(json_response(200, chat_body("ok")));
  EXPECT_TRUE(make_provider("openai:gpt-4o", fast_options(server))->complete(minimal_request()).ok());
  EXPECT_EQ(server.request_count(), 2);
}

TEST(BrokenServers, MalformedJsonSuccessBodyIsAClearError) {
  LoopbackServer server;
  server.set_fallback(json_response(200, R"({"id":"x","choices":[{"message":{"content":"hi")"));
  Reply r = make_provider("openai:gpt-4o", fast_options(server))->complete(minimal_request());
  EXPECT_EQ(r.error, ErrorKind::bad_response);
  EXPECT_EQ(r.http_status, 200);
  EXPECT_NE(r.error_message.find("not a JSON object"), std::string::npos) << r.error_message;
  EXPECT_EQ(server.request_count(), 3);  // retried: a cut 2xx body is mostly transient
}

// Gemini sometimes answers 200 with no candidates and no block reason: retried like any broken reply, and the
// answer that follows is the one recorded (not a cached no_code).
TEST(BrokenServers, GeminiWithoutCandidatesIsRetried) {
  LoopbackServer server;
  server.push(json_response(200, R"({"usageMetadata":{"promptTokenCount":5},"modelVersion":"gemini-2.5-pro"})"));
  server.push(json_response(200, fx::kGemini));
  Reply r = make_provider("gemini:gemini-2.5-pro", fast_options(server, "/v1beta"))->complete(minimal_request());
  EXPECT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.attempts, 2);
  EXPECT_EQ(server.request_count(), 2);
}

// Records say what was sent: a temperature dropped for a model that rejects it is not reported as used.
TEST(Requests, ReplyCarriesTheParametersActuallySent) {
  LoopbackServer server;
  server.set_fallback(json_response(200, fx::kAnthropic));
  Request req = minimal_request();
  req.temperature = 0.5;
  Reply dropped = make_provider("anthropic:claude-opus-4-7", fast_options(server))->complete(req);
  ASSERT_TRUE(dropped.ok()) << dropped.error_message;
  EXPECT_FALSE(dropped.sent.contains("temperature")) << dropped.sent.dump();
  EXPECT_FALSE(dropped.sent.contains("messages"));  // the prompt itself is not repeated
  EXPECT_EQ(dropped.sent["max_tokens"], req.max_output_tokens);
  Reply kept = make_provider("anthropic:claude-sonnet-4-5", fast_options(server))->complete(req);
  EXPECT_EQ(kept.sent["temperature"], 0.5);
}

TEST(BrokenServers, SlowServerTripsTheTotalTimeout) {
  LoopbackServer server;
  ScriptedResponse slow = json_response(200, chat_body("too late"));
  slow.delay_s = 3;
  server.set_fallback(slow);
  ProviderOptions opt = fast_options(server);
  opt.http.total_timeout_s = 0.3;
  opt.retry.max_attempts = 2;
  auto t0 = std::chrono::steady_clock::now();
  Reply r = make_provider("openai:gpt-4o", opt)->complete(minimal_request());
  EXPECT_EQ(r.error, ErrorKind::timeout);
  EXPECT_EQ(r.attempts, 2);  // timeouts are retried
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_LT(seconds_since(t0), 2.0);
}

TEST(BrokenServers, DeepSeekKeepAliveBlankLinesThenBody) {
  LoopbackServer server;
  ScriptedResponse waiting = json_response(200, fx::kDeepSeekThinking);
  waiting.keepalive_lines = 8;
  waiting.keepalive_interval_s = 0.05;
  server.push(waiting);
  Reply r = make_provider("deepseek:deepseek-v4-pro", fast_options(server, ""))->complete(minimal_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "Hello! How can I help you today?");
  EXPECT_EQ(r.attempts, 1);
  EXPECT_GE(r.latency_s, 0.35);
}

TEST(BrokenServers, ConnectionRefusedIsRetriedThenGivenUp) {
  ProviderOptions opt;
  opt.base_url = "http://127.0.0.1:" + std::to_string(pkb::testing::unused_port()) + "/v1";
  opt.api_key = "k";
  opt.retry = {3, 0.01, 0.05, 1};
  Reply r = make_provider("openai:gpt-4o", opt)->complete(minimal_request());
  EXPECT_EQ(r.error, ErrorKind::transport);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.http_status, 0);
  EXPECT_NE(r.error_message.find("transport"), std::string::npos);
}

TEST(BrokenServers, DroppedConnectionIsRetried) {
  LoopbackServer server;
  ScriptedResponse drop;
  drop.drop = true;
  server.push(drop);
  server.push(json_response(200, chat_body("ok")));
  Reply r = make_provider("openai:gpt-4o", fast_options(server))->complete(minimal_request());
  EXPECT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(server.request_count(), 2);
}

TEST(Answers, ReplyWithoutCodeIsNoCode) {
  LoopbackServer server;
  server.push(json_response(200, chat_body("I'm sorry, I can't write that kernel.")));
  Reply r = make_provider("openai:gpt-4o", fast_options(server))->complete(minimal_request());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(extract_code(r.text, r.finish).status, CodeStatus::no_code);
}

TEST(Answers, LengthFinishIsTruncated) {
  LoopbackServer server;
  server.push(
      json_response(200, chat_body("```cuda\nextern \"C\" int pkb_run(void** b, int n) {\n  for (int i", "length")));
  Reply r = make_provider("openai:gpt-4o", fast_options(server))->complete(minimal_request());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.finish, FinishReason::length);
  auto e = extract_code(r.text, r.finish);
  EXPECT_EQ(e.status, CodeStatus::truncated);
  EXPECT_NE(e.code.find("pkb_run"), std::string::npos);
}

TEST(Answers, ReasoningFieldAndThinkBlocksNeverBecomeCode) {
  // Draft code in reasoning_content and in a <think> block; the real kernel only in the answer.
  std::string draft = "```cuda\nextern \"C\" int pkb_run(void** b, int n) { return 1; /* DRAFT */ }\n```";
  LoopbackServer server;
  server.push(json_response(200, chat_body("<think>" + draft + "</think>\n" + pkb::testing::kCudaAnswer, "stop",
                                           {{"reasoning_content", "first draft: " + draft}})));
  Reply r = make_provider("sglang:qwen", fast_options(server))->complete(minimal_request());
  ASSERT_TRUE(r.ok());
  auto e = extract_code(r.text, r.finish);
  EXPECT_EQ(e.status, CodeStatus::ok);
  EXPECT_EQ(e.code.find("DRAFT"), std::string::npos);
  EXPECT_NE(e.code.find("add<<<1, 1>>>"), std::string::npos);
  EXPECT_NE(r.reasoning.find("DRAFT"), std::string::npos);  // kept, but separately
  EXPECT_EQ(r.text.find("<think>"), std::string::npos);
}

}  // namespace
}  // namespace pkb::models
