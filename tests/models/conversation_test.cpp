// Multi-turn requests (pkb run --turns): every wire format sends the earlier turns in order with the roles its
// API expects, and the reply cache keys on the whole conversation while single-turn keys stay as they were.
#include <gtest/gtest.h>

#include "models/cache.h"
#include "models/wire.h"

namespace pkb::models {
namespace {

using nlohmann::json;

Request conversation() {
  Request req;
  req.system = "sys";
  req.history = {{"write a kernel", "```cuda\nv1\n```"}, {"it did not compile: error X", "```cuda\nv2\n```"}};
  req.user = "it was wrong: 3 mismatches";
  req.max_output_tokens = 100;
  return req;
}

json body(Api api, const std::string& model) {
  return json::parse(make_wire_format(api)->build(parse_model_name(model), "k", conversation()).body);
}

// (role, text) pairs in the order sent.
using Turns = std::vector<std::pair<std::string, std::string>>;

const Turns kExpected = {{"user", "write a kernel"},
                         {"assistant", "```cuda\nv1\n```"},
                         {"user", "it did not compile: error X"},
                         {"assistant", "```cuda\nv2\n```"},
                         {"user", "it was wrong: 3 mismatches"}};

Turns messages(const json& list, const char* text_key = "content") {
  Turns out;
  for (const auto& m : list) out.emplace_back(m["role"], m[text_key]);
  return out;
}

TEST(Conversation, OpenAIChatSendsEveryTurnAfterTheSystemMessage) {
  for (const char* model : {"openai:gpt-4o", "compat:http://127.0.0.1:1/v1@tiny"}) {
    json b = body(parse_model_name(model).api, model);
    ASSERT_EQ(b["messages"].size(), 6u) << model;
    EXPECT_EQ(b["messages"][0]["role"], "system");
    Turns rest = messages(json(std::vector<json>(b["messages"].begin() + 1, b["messages"].end())));
    EXPECT_EQ(rest, kExpected) << model;
  }
}

TEST(Conversation, ResponsesSendsInputItems) {
  json b = body(Api::openai_responses, "openai-responses:gpt-5.5");
  ASSERT_TRUE(b["input"].is_array());
  EXPECT_EQ(messages(b["input"]), kExpected);
  EXPECT_EQ(b["instructions"], "sys");
  EXPECT_EQ(b["store"], false);
}

TEST(Conversation, AnthropicAlternatesUserAndAssistant) {
  json b = body(Api::anthropic, "anthropic:claude-sonnet-4-5");
  EXPECT_EQ(messages(b["messages"]), kExpected);
  EXPECT_EQ(b["system"], "sys");
}

TEST(Conversation, GeminiCallsTheAssistantModel) {
  json b = body(Api::gemini, "gemini:gemini-2.5-pro");
  Turns got;
  for (const auto& c : b["contents"]) got.emplace_back(c["role"], c["parts"][0]["text"]);
  Turns expected = kExpected;
  for (auto& [role, text] : expected)
    if (role == "assistant") role = "model";
  EXPECT_EQ(got, expected);
}

TEST(Conversation, SingleTurnRequestsAreUnchanged) {
  Request one = conversation();
  one.history.clear();
  json b = json::parse(
      make_wire_format(Api::openai_responses)->build(parse_model_name("openai-responses:gpt-5.5"), "k", one).body);
  EXPECT_EQ(b["input"], "it was wrong: 3 mismatches");  // a plain string, as before
  EXPECT_FALSE(ReplyCache::key_material(parse_model_name("openai:gpt-4o"), one).contains("history"));
  EXPECT_FALSE(to_json(one).contains("history"));
}

TEST(Conversation, TheCacheKeysOnTheWholeConversation) {
  ModelName name = parse_model_name("openai:gpt-4o");
  Request a = conversation(), b = conversation(), last_only = conversation();
  b.history[0].assistant = "```cuda\nanother v1\n```";
  last_only.history.clear();
  EXPECT_NE(ReplyCache::key(name, a), ReplyCache::key(name, b));
  EXPECT_NE(ReplyCache::key(name, a), ReplyCache::key(name, last_only));
  EXPECT_EQ(ReplyCache::key(name, a), ReplyCache::key(name, conversation()));
  EXPECT_EQ(to_json(a)["history"][1]["user"], "it did not compile: error X");
}

}  // namespace
}  // namespace pkb::models
