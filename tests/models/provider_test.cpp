// Each provider against the loopback server: what goes on the wire and how replies and errors come back.
#include "models/provider.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "core/error.h"
#include "fixtures.h"
#include "model_test_util.h"

namespace pkb::models {
namespace {

namespace fx = pkb::testing::fixtures;
using pkb::testing::fast_options;
using pkb::testing::json_response;
using pkb::testing::LoopbackServer;

constexpr const char* kProviderKey = "sk-test-SECRET-0123456789";

Request chat_request() {
  Request r;
  r.system = "You write CUDA.";
  r.user = "Write a kernel.";
  r.max_output_tokens = 2048;
  r.temperature = 0.7;
  return r;
}

TEST(OpenAIChatProvider, SendsBearerAuthAndChatBody) {
  LoopbackServer server;
  server.push(json_response(200, fx::kOpenAIChat));
  auto p = make_provider("openai:gpt-5.5", fast_options(server));
  Reply r = p->complete(chat_request());

  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "Hello! How can I assist you today?");
  EXPECT_EQ(r.finish, FinishReason::stop);
  EXPECT_EQ(r.usage.input_tokens, 19);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(r.http_status, 200);
  auto req = server.last_request();
  EXPECT_EQ(req.method, "POST");
  EXPECT_EQ(req.target, "/v1/chat/completions");
  EXPECT_EQ(req.headers["authorization"], std::string("Bearer ") + kProviderKey);
  EXPECT_EQ(req.headers["content-type"], "application/json");
  auto body = pkb::testing::body_json(req);
  EXPECT_EQ(body["model"], "gpt-5.5");
  EXPECT_EQ(body["messages"][0], (nlohmann::json{{"role", "developer"}, {"content", "You write CUDA."}}));
  EXPECT_EQ(body["messages"][1], (nlohmann::json{{"role", "user"}, {"content", "Write a kernel."}}));
  EXPECT_EQ(body["max_completion_tokens"], 2048);
  EXPECT_FALSE(body.contains("temperature"));  // gpt-5.5 is a reasoning model
}

TEST(OpenAIChatProvider, ErrorFormatIsReportedWithoutRetry) {
  LoopbackServer server;
  server.push(json_response(400, fx::kOpenAIUnsupportedValue));
  Reply r = make_provider("openai:gpt-5.5", fast_options(server))->complete(chat_request());
  EXPECT_EQ(r.error, ErrorKind::bad_request);
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_EQ(server.request_count(), 1);
  EXPECT_NE(r.error_message.find("unsupported_value"), std::string::npos);
  EXPECT_NE(r.error_message.find("'temperature' does not support 0.5"), std::string::npos);
}

TEST(OpenAIResponsesProvider, SendsResponsesBody) {
  LoopbackServer server;
  server.push(json_response(200, fx::kResponses));
  Reply r = make_provider("openai-responses:gpt-5.5", fast_options(server))->complete(chat_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "The classic tongue twister...");
  EXPECT_EQ(r.usage.reasoning_tokens, 832);
  auto req = server.last_request();
  EXPECT_EQ(req.target, "/v1/responses");
  EXPECT_EQ(req.headers["authorization"], std::string("Bearer ") + kProviderKey);
  auto body = pkb::testing::body_json(req);
  EXPECT_EQ(body["instructions"], "You write CUDA.");
  EXPECT_EQ(body["input"], "Write a kernel.");
  EXPECT_EQ(body["max_output_tokens"], 2048);
  EXPECT_EQ(body["store"], false);
}

TEST(AnthropicProvider, SendsApiKeyVersionAndMessagesBody) {
  LoopbackServer server;
  server.push(json_response(200, fx::kAnthropic));
  Reply r = make_provider("anthropic:claude-sonnet-4-5", fast_options(server))->complete(chat_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "Hello!");
  EXPECT_EQ(r.finish_raw, "end_turn");
  EXPECT_EQ(r.finish, FinishReason::stop);
  EXPECT_EQ(r.usage.output_tokens, 6);
  auto req = server.last_request();
  EXPECT_EQ(req.target, "/v1/messages");
  EXPECT_EQ(req.headers["x-api-key"], kProviderKey);
  EXPECT_EQ(req.headers["anthropic-version"], "2023-06-01");
  EXPECT_EQ(req.headers.count("authorization"), 0u);
  auto body = pkb::testing::body_json(req);
  EXPECT_EQ(body["model"], "claude-sonnet-4-5");
  EXPECT_EQ(body["system"], "You write CUDA.");
  EXPECT_EQ(body["max_tokens"], 2048);
  EXPECT_EQ(body["temperature"], 0.7);
  EXPECT_EQ(body["messages"], nlohmann::json::parse(R"([{"role":"user","content":"Write a kernel."}])"));
}

TEST(AnthropicProvider, ErrorFormat) {
  LoopbackServer server;
  server.push(json_response(400, fx::kAnthropicInvalidRequest));
  Reply r = make_provider("anthropic:claude-opus-4-7", fast_options(server))->complete(chat_request());
  EXPECT_EQ(r.error, ErrorKind::bad_request);
  EXPECT_EQ(server.request_count(), 1);
  EXPECT_EQ(r.error_message,
            "HTTP 400 invalid_request_error: messages: roles must alternate between \"user\" and \"assistant\"");
}

TEST(GeminiProvider, SendsGoogApiKeyHeaderAndGenerateContentBody) {
  LoopbackServer server;
  server.push(json_response(200, fx::kGemini));
  Reply r = make_provider("gemini:gemini-3-pro-preview", fast_options(server, "/v1beta"))->complete(chat_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_NE(r.text.find("my_list.sort()"), std::string::npos);
  EXPECT_EQ(r.finish_raw, "STOP");
  EXPECT_EQ(r.usage.output_tokens, 87);
  auto req = server.last_request();
  EXPECT_EQ(req.target, "/v1beta/models/gemini-3-pro-preview:generateContent");  // no ?key= in the URL
  EXPECT_EQ(req.headers["x-goog-api-key"], kProviderKey);
  auto body = pkb::testing::body_json(req);
  EXPECT_EQ(body["contents"][0]["parts"][0]["text"], "Write a kernel.");
  EXPECT_EQ(body["systemInstruction"]["parts"][0]["text"], "You write CUDA.");
  EXPECT_EQ(body["generationConfig"]["maxOutputTokens"], 2048);
  EXPECT_EQ(body["generationConfig"]["temperature"], 0.7);
}

TEST(GeminiProvider, ErrorFormat) {
  LoopbackServer server;
  server.push(json_response(400, fx::kGeminiInvalidArgument));
  Reply r = make_provider("gemini:gemini-3-pro-preview", fast_options(server, "/v1beta"))->complete(chat_request());
  EXPECT_EQ(r.error, ErrorKind::bad_request);
  EXPECT_EQ(server.request_count(), 1);
  EXPECT_NE(r.error_message.find("INVALID_ARGUMENT"), std::string::npos);
  EXPECT_NE(r.error_message.find("Unknown name \"includeThoughts\""), std::string::npos);
}

TEST(CompatProvider, DeepSeekThinkingReply) {
  LoopbackServer server;
  server.push(json_response(200, fx::kDeepSeekThinking));
  Reply r = make_provider("deepseek:deepseek-v4-pro", fast_options(server, ""))->complete(chat_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.text, "Hello! How can I help you today?");
  EXPECT_NE(r.reasoning.find("helpful assistant"), std::string::npos);
  EXPECT_EQ(r.usage.reasoning_tokens, 38);
  auto req = server.last_request();
  EXPECT_EQ(req.target, "/chat/completions");
  auto body = pkb::testing::body_json(req);
  EXPECT_EQ(body["max_tokens"], 2048);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_EQ(body["temperature"], 0.7);
}

TEST(CompatProvider, ExplicitCompatUrlWithoutKeySendsNoAuthorization) {
  LoopbackServer server;
  server.push(json_response(200, pkb::testing::chat_body("ok")));
  ::unsetenv("PKB_COMPAT_API_KEY");
  ProviderOptions opt = fast_options(server);
  opt.base_url.reset();
  opt.api_key.reset();
  auto p = make_provider("compat:" + server.url() + "/v1@my-model", opt);
  Reply r = p->complete(chat_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  auto req = server.last_request();
  EXPECT_EQ(req.target, "/v1/chat/completions");
  EXPECT_EQ(req.headers.count("authorization"), 0u);
  EXPECT_EQ(pkb::testing::body_json(req)["model"], "my-model");
}

TEST(CompatProvider, VllmFlatErrorFormat) {
  LoopbackServer server;
  server.push(json_response(400, fx::kVllmErrorOld));
  Reply r = make_provider("vllm:m", fast_options(server))->complete(chat_request());
  EXPECT_EQ(r.error, ErrorKind::bad_request);
  EXPECT_NE(r.error_message.find("maximum context length is 32768"), std::string::npos);
}

TEST(ProviderConfig, BaseUrlComesFromTheEnvironment) {
  LoopbackServer server;
  server.push(json_response(200, fx::kAnthropic));
  ::setenv("PKB_ANTHROPIC_BASE_URL", (server.url() + "/proxy/v1/").c_str(), 1);
  ProviderOptions opt = fast_options(server);
  opt.base_url.reset();
  auto p = make_provider("anthropic:claude-sonnet-4-5", opt);
  EXPECT_EQ(p->name().base_url, server.url() + "/proxy/v1");
  EXPECT_TRUE(p->complete(chat_request()).ok());
  EXPECT_EQ(server.last_request().target, "/proxy/v1/messages");
}

TEST(ProviderConfig, KeyComesFromTheEnvironment) {
  LoopbackServer server;
  server.push(json_response(200, fx::kGemini));
  ::unsetenv("GEMINI_API_KEY");
  ::setenv("GOOGLE_API_KEY", "google-env-key", 1);
  ProviderOptions opt = fast_options(server, "/v1beta");
  opt.api_key.reset();
  make_provider("gemini:gemini-3-pro-preview", opt)->complete(chat_request());
  EXPECT_EQ(server.last_request().headers["x-goog-api-key"], "google-env-key");
}

TEST(ProviderConfig, HostedProviderWithoutKeyIsAConfigurationError) {
  ::unsetenv("OPENAI_API_KEY");
  ::unsetenv(base_url_env_var("openai").c_str());
  try {
    make_provider("openai:gpt-5.5");
    FAIL() << "expected pkb::Error";
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("OPENAI_API_KEY"), std::string::npos);
  }
}

TEST(ProviderConfig, KeyIsRedactedFromErrorMessages) {
  LoopbackServer server;
  // Some gateways echo the key back; it must not reach logs or records.
  server.push(json_response(401, std::string(R"({"error":{"message":"Incorrect API key provided: )") + kProviderKey +
                                     R"(","type":"invalid_request_error","code":"invalid_api_key"}})"));
  Reply r = make_provider("openai:gpt-4o", fast_options(server))->complete(chat_request());
  EXPECT_EQ(r.error, ErrorKind::auth);
  EXPECT_EQ(r.error_message.find(kProviderKey), std::string::npos);
  EXPECT_NE(r.error_message.find("[redacted]"), std::string::npos);
}

}  // namespace
}  // namespace pkb::models
