// Request building and reply parsing per wire format, without HTTP (the loopback tests cover the transport).
#include "models/wire.h"

#include <gtest/gtest.h>

#include "fixtures.h"
#include "model_test_util.h"

namespace pkb::models {
namespace {

namespace fx = pkb::testing::fixtures;
using nlohmann::json;

json body_of(const HttpRequest& r) { return json::parse(r.body); }

Reply parse(Api api, const std::string& body, AttemptVerdict* verdict = nullptr) {
  Reply r;
  r.http_status = 200;
  AttemptVerdict v = parse_success(*make_wire_format(api), body, r);
  if (verdict) *verdict = v;
  r.error = v.kind;
  return r;
}

Request simple_request() {
  Request req;
  req.system = "sys";
  req.user = "hello";
  req.max_output_tokens = 1000;
  req.temperature = 0.5;
  return req;
}

TEST(ReasoningRules, ModelFamilies) {
  EXPECT_TRUE(openai_is_reasoning_model("gpt-5.5"));
  EXPECT_TRUE(openai_is_reasoning_model("o3-mini"));
  EXPECT_TRUE(openai_is_reasoning_model("o1-2024-12-17"));
  EXPECT_FALSE(openai_is_reasoning_model("gpt-5-chat-latest"));
  EXPECT_FALSE(openai_is_reasoning_model("gpt-4o"));
  EXPECT_FALSE(openai_is_reasoning_model("omni"));
  EXPECT_TRUE(anthropic_rejects_temperature("claude-opus-4-7"));
  EXPECT_FALSE(anthropic_rejects_temperature("claude-sonnet-4-5"));
}

TEST(OpenAIChatBuild, ReasoningModelGetsDeveloperRoleAndNoTemperature) {
  auto wire = make_wire_format(Api::openai_chat);
  json b = body_of(wire->build(parse_model_name("openai:gpt-5.5"), "k", simple_request()));
  EXPECT_EQ(b["messages"][0]["role"], "developer");
  EXPECT_EQ(b["max_completion_tokens"], 1000);
  EXPECT_FALSE(b.contains("max_tokens"));
  EXPECT_FALSE(b.contains("temperature"));
}

TEST(OpenAIChatBuild, ClassicModelKeepsTemperatureAndSystemRole) {
  auto wire = make_wire_format(Api::openai_chat);
  json b = body_of(wire->build(parse_model_name("openai:gpt-4o"), "k", simple_request()));
  EXPECT_EQ(b["messages"][0]["role"], "system");
  EXPECT_EQ(b["temperature"], 0.5);
  EXPECT_EQ(b["max_completion_tokens"], 1000);
}

TEST(OpenAIChatBuild, NoSystemMessageWhenSystemIsEmpty) {
  Request req = simple_request();
  req.system.clear();
  json b = body_of(make_wire_format(Api::openai_chat)->build(parse_model_name("openai:gpt-4o"), "k", req));
  ASSERT_EQ(b["messages"].size(), 1u);
  EXPECT_EQ(b["messages"][0]["role"], "user");
}

TEST(CompatBuild, UsesMaxTokensAndNoAuthWithoutKey) {
  auto http = make_wire_format(Api::openai_compat)->build(parse_model_name("ollama:llama3.2"), "", simple_request());
  json b = body_of(http);
  EXPECT_EQ(b["max_tokens"], 1000);
  EXPECT_FALSE(b.contains("max_completion_tokens"));
  EXPECT_EQ(b["messages"][0]["role"], "system");
  EXPECT_EQ(b["temperature"], 0.5);
  for (const auto& h : http.headers) EXPECT_EQ(h.find("Authorization"), std::string::npos);
  EXPECT_EQ(http.url, "http://localhost:11434/v1/chat/completions");
}

TEST(ExtraParams, MergePatchAddsOverridesAndDeletes) {
  Request req = simple_request();
  req.extra = {{"reasoning_effort", "high"}, {"temperature", nullptr}, {"max_tokens", 5}};
  json b = body_of(make_wire_format(Api::openai_compat)->build(parse_model_name("vllm:m"), "", req));
  EXPECT_EQ(b["reasoning_effort"], "high");
  EXPECT_FALSE(b.contains("temperature"));
  EXPECT_EQ(b["max_tokens"], 5);
}

TEST(ExtraParams, NestedObjectsMergeInsteadOfReplacing) {
  Request req = simple_request();
  req.extra = {{"generationConfig", {{"thinkingConfig", {{"thinkingLevel", "HIGH"}}}}}};
  json b = body_of(make_wire_format(Api::gemini)->build(parse_model_name("gemini:gemini-3-pro-preview"), "k", req));
  EXPECT_EQ(b["generationConfig"]["maxOutputTokens"], 1000);
  EXPECT_EQ(b["generationConfig"]["temperature"], 0.5);
  EXPECT_EQ(b["generationConfig"]["thinkingConfig"]["thinkingLevel"], "HIGH");
}

TEST(ResponsesBuild, InstructionsStoreFalseAndMinimumCap) {
  Request req = simple_request();
  req.max_output_tokens = 4;
  json b =
      body_of(make_wire_format(Api::openai_responses)->build(parse_model_name("openai-responses:gpt-5.5"), "k", req));
  EXPECT_EQ(b["instructions"], "sys");
  EXPECT_EQ(b["input"], "hello");
  EXPECT_EQ(b["max_output_tokens"], 16);
  EXPECT_EQ(b["store"], false);
  EXPECT_FALSE(b.contains("temperature"));
}

TEST(AnthropicBuild, TemperatureDroppedOnlyForModelsThatRejectIt) {
  auto wire = make_wire_format(Api::anthropic);
  json opus = body_of(wire->build(parse_model_name("anthropic:claude-opus-4-7"), "k", simple_request()));
  json sonnet = body_of(wire->build(parse_model_name("anthropic:claude-sonnet-4-5"), "k", simple_request()));
  EXPECT_FALSE(opus.contains("temperature"));
  EXPECT_EQ(sonnet["temperature"], 0.5);
  EXPECT_EQ(opus["max_tokens"], 1000);
  EXPECT_EQ(opus["system"], "sys");
}

TEST(OpenAIChatParse, DocFixture) {
  Reply r = parse(Api::openai_chat, fx::kOpenAIChat);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.text, "Hello! How can I assist you today?");
  EXPECT_EQ(r.finish, FinishReason::stop);
  EXPECT_EQ(r.model_reported, "gpt-5.4");
  EXPECT_TRUE(r.usage.known);
  EXPECT_EQ(r.usage.input_tokens, 19);
  EXPECT_EQ(r.usage.output_tokens, 10);
}

TEST(OpenAIChatParse, RefusalWithNullContent) {
  Reply r = parse(Api::openai_chat, pkb::testing::chat_body("", "stop", {{"content", nullptr}, {"refusal", "No."}}));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.text, "No.");
  EXPECT_EQ(r.finish_raw, "refusal");
  EXPECT_EQ(r.finish, FinishReason::refused);
}

// Cut-offs other than length: the answer may hold half a kernel, which must not be recorded as ok.
TEST(ProviderCutOffs, ContentFiltersAndRefusalsAreRefused) {
  EXPECT_EQ(parse(Api::openai_chat, pkb::testing::chat_body("```cuda\nint", "content_filter")).finish,
            FinishReason::refused);
  json resp = {{"status", "incomplete"},
               {"incomplete_details", {{"reason", "content_filter"}}},
               {"output", {{{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", "```cuda\nint"}}}}}}}};
  Reply r = parse(Api::openai_responses, resp.dump());
  EXPECT_EQ(r.finish, FinishReason::refused);
  EXPECT_EQ(r.finish_raw, "incomplete:content_filter");
  json a = json::parse(fx::kAnthropic);
  a["stop_reason"] = "refusal";
  EXPECT_EQ(parse(Api::anthropic, a.dump()).finish, FinishReason::refused);
  for (const char* why : {"SAFETY", "RECITATION", "PROHIBITED_CONTENT"}) {
    json g = json::parse(fx::kGemini);
    g["candidates"][0]["finishReason"] = why;
    EXPECT_EQ(parse(Api::gemini, g.dump()).finish, FinishReason::refused) << why;
  }
}

// A 200 with neither candidates nor a block reason is a broken reply: retried, never cached as "no code".
TEST(GeminiParse, NoCandidatesWithoutABlockReasonIsABadResponse) {
  AttemptVerdict v;
  Reply r = parse(Api::gemini, R"({"usageMetadata":{"promptTokenCount":5},"modelVersion":"gemini-2.5-pro"})", &v);
  EXPECT_EQ(r.error, ErrorKind::bad_response);
  EXPECT_TRUE(v.retry);
}

TEST(CompatParse, ReasoningFieldsAreKeptApart) {
  Reply ds = parse(Api::openai_compat, fx::kDeepSeekThinking);
  EXPECT_EQ(ds.text, "Hello! How can I help you today?");
  EXPECT_NE(ds.reasoning.find("helpful assistant"), std::string::npos);
  EXPECT_EQ(ds.usage.reasoning_tokens, 38);
  Reply vllm = parse(Api::openai_compat, pkb::testing::chat_body("answer", "stop", {{"reasoning", "thoughts"}}));
  EXPECT_EQ(vllm.text, "answer");
  EXPECT_EQ(vllm.reasoning, "thoughts");
  // vLLM >= #33635 may send the same text under both names: keep one copy.
  Reply both =
      parse(Api::openai_compat, pkb::testing::chat_body("a", "stop", {{"reasoning", "t"}, {"reasoning_content", "t"}}));
  EXPECT_EQ(both.reasoning, "t");
}

TEST(CompatParse, ThinkTagsMoveToReasoning) {
  Reply r = parse(Api::openai_compat, pkb::testing::chat_body("<think>draft</think>\n\nfinal", "stop"));
  EXPECT_EQ(r.text, "final");
  EXPECT_EQ(r.reasoning, "draft");
}

TEST(CompatParse, SglangTopLevelReasoningTokensAndAbort) {
  json b = json::parse(pkb::testing::chat_body("x", "abort"));
  b["usage"]["reasoning_tokens"] = 3;
  Reply r = parse(Api::openai_compat, b.dump());
  EXPECT_EQ(r.usage.reasoning_tokens, 3);
  EXPECT_EQ(r.finish, FinishReason::length);  // the server aborted the answer: cut, so never a success
  EXPECT_EQ(r.finish_raw, "abort");
}

TEST(ResponsesParse, DocFixture) {
  Reply r = parse(Api::openai_responses, fx::kResponses);
  EXPECT_EQ(r.text, "The classic tongue twister...");
  EXPECT_EQ(r.finish, FinishReason::stop);
  EXPECT_EQ(r.usage.output_tokens, 1035);
  EXPECT_EQ(r.usage.reasoning_tokens, 832);
}

TEST(ResponsesParse, IncompleteWithOnlyReasoningIsLength) {
  json b = {
      {"status", "incomplete"},
      {"incomplete_details", {{"reason", "max_output_tokens"}}},
      {"output", {{{"type", "reasoning"}, {"summary", {{{"type", "summary_text"}, {"text", "plan"}}}}}}},
      {"usage", {{"input_tokens", 5}, {"output_tokens", 16}, {"output_tokens_details", {{"reasoning_tokens", 16}}}}}};
  Reply r = parse(Api::openai_responses, b.dump());
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.reasoning, "plan");
  EXPECT_EQ(r.finish, FinishReason::length);
  EXPECT_EQ(r.finish_raw, "incomplete:max_output_tokens");
}

TEST(ResponsesParse, FailedStatusIsAnApiError) {
  AttemptVerdict v;
  json b = {
      {"status", "failed"}, {"error", {{"code", "server_error"}, {"message", "boom"}}}, {"output", json::array()}};
  Reply r = parse(Api::openai_responses, b.dump(), &v);
  EXPECT_EQ(r.error, ErrorKind::api_error);
  EXPECT_TRUE(v.retry);
  EXPECT_NE(v.message.find("boom"), std::string::npos);
}

TEST(AnthropicParse, ThinkingBlocksExcludedAndCacheTokensCounted) {
  json b = json::parse(fx::kAnthropic);
  b["content"] = {{{"type", "thinking"}, {"thinking", "let me think"}, {"signature", "sig"}},
                  {{"type", "redacted_thinking"}, {"data", "opaque"}},
                  {{"type", "text"}, {"text", "part one, "}},
                  {{"type", "text"}, {"text", "part two"}}};
  b["stop_reason"] = "max_tokens";
  b["usage"]["cache_read_input_tokens"] = 100;
  Reply r = parse(Api::anthropic, b.dump());
  EXPECT_EQ(r.text, "part one, part two");
  EXPECT_EQ(r.reasoning, "let me think");
  EXPECT_EQ(r.finish, FinishReason::length);
  EXPECT_EQ(r.usage.input_tokens, 112);
}

TEST(GeminiParse, ThoughtPartsExcluded) {
  json b = json::parse(fx::kGemini);
  b["candidates"][0]["content"]["parts"] = {{{"text", "thinking..."}, {"thought", true}}, {{"text", "answer"}}};
  b["usageMetadata"]["thoughtsTokenCount"] = 20;
  Reply r = parse(Api::gemini, b.dump());
  EXPECT_EQ(r.text, "answer");
  EXPECT_EQ(r.reasoning, "thinking...");
  EXPECT_EQ(r.usage.output_tokens, 107);  // candidates 87 + thoughts 20: thinking is billed as output
  EXPECT_EQ(r.usage.reasoning_tokens, 20);
}

TEST(GeminiParse, MaxTokensWithNoPartsIsAnEmptyTruncatedAnswer) {
  Reply r = parse(Api::gemini, fx::kGeminiMaxTokensNoParts);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.finish, FinishReason::length);
  EXPECT_EQ(r.usage.output_tokens, 2999);
  EXPECT_EQ(r.model_reported, "gemini-2.5-pro-preview-05-06");
}

TEST(GeminiParse, BlockedPromptHasNoCandidates) {
  Reply r = parse(Api::gemini, R"({"promptFeedback":{"blockReason":"SAFETY"}})");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.finish_raw, "blocked:SAFETY");
  EXPECT_EQ(r.finish, FinishReason::refused);
}

TEST(ParseSuccess, MalformedBodiesAreBadResponses) {
  for (const char* body :
       {"not json at all", "{\"choices\": [", "[]", "{}", R"({"choices":[{"message":"x"}]})", R"({"choices":[]})"}) {
    AttemptVerdict v;
    Reply r = parse(Api::openai_chat, body, &v);
    EXPECT_EQ(r.error, ErrorKind::bad_response) << body;
    EXPECT_TRUE(v.retry);  // a cut or empty 2xx body is mostly a proxy's or a transient fault
  }
}

TEST(ParseSuccess, LeadingBlankLinesAreFine) {
  Reply r = parse(Api::openai_compat, "\n\n\n" + std::string(fx::kDeepSeekThinking));
  EXPECT_TRUE(r.ok());
}

}  // namespace
}  // namespace pkb::models
