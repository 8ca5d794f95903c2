// Tool calling (agent mode) in every wire format against the loopback server, buffered and streamed: tool
// definitions reach the body in each API's shape, a reply's parallel calls come back in order with ids and raw
// arguments, the conversation (assistant calls, tool results, a nudge) is sent back in each API's shape, and the
// oddities: Anthropic arguments that stream as malformed JSON stay raw, a Responses stream whose terminal event lacks
// output[] is rebuilt from its deltas, Gemini's call ids and thought signatures.
#include <gtest/gtest.h>

#include "model_test_util.h"
#include "models/cache.h"
#include "models/provider.h"
#include "tool_wire.h"

namespace pkb::models {
namespace {

using json = nlohmann::json;
using pkb::testing::LoopbackServer;
namespace tw = pkb::testing::tools;

struct Case {
  tw::Format format;
  std::string spec, path;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {{tw::Format::chat, "openai:gpt-4o", "/v1"},
                                        {tw::Format::responses, "openai-responses:gpt-4o", "/v1"},
                                        {tw::Format::anthropic, "anthropic:claude-sonnet-4-5", "/v1"},
                                        {tw::Format::gemini, "gemini:gemini-2.5-pro", "/v1beta"}};
  return all;
}

std::string name_of(tw::Format f) {
  const char* names[] = {"chat", "responses", "anthropic", "gemini"};
  return names[static_cast<int>(f)];
}

Request tool_request() {
  Request r;
  r.system = "You write kernels.";
  r.user = "Write one.";
  r.tools = {{"compile_kernel",
              "Compiles.",
              {{"type", "object"},
               {"properties", {{"source", {{"type", "string"}}}}},
               {"required", {"source"}},
               {"additionalProperties", false}}},
             {"submit_kernel", "Submits.", {{"type", "object"}, {"properties", {{"source", {{"type", "string"}}}}}}}};
  return r;
}

Reply complete(LoopbackServer& server, const Case& c, bool streamed, const Request& req) {
  ProviderOptions opt = pkb::testing::fast_options(server, c.path);
  opt.stream = streamed;
  return make_provider(c.spec, opt)->complete(req);
}

std::vector<tw::Call> two_calls(tw::Format f) {
  std::string a = f == tw::Format::gemini ? "" : "call_a", b = f == tw::Format::gemini ? "" : "call_b";
  return {{a, "compile_kernel", R"({"source":"int x = 1;\n"})"},
          {b, "submit_kernel", R"({"source":"// \u00e9t\u00e9 \"q\""})"}};
}

TEST(ToolCalls, ParallelCallsComeBackInOrderInEveryFormatBufferedAndStreamed) {
  for (const Case& c : cases())
    for (bool streamed : {false, true}) {
      SCOPED_TRACE(name_of(c.format) + (streamed ? " streamed" : " buffered"));
      LoopbackServer server;
      auto calls = two_calls(c.format);
      server.push(tw::reply(c.format, streamed, "Let me check.", calls));
      Reply r = complete(server, c, streamed, tool_request());
      ASSERT_TRUE(r.ok()) << r.error_message;
      EXPECT_EQ(r.streamed, streamed);
      EXPECT_EQ(r.text, "Let me check.");
      EXPECT_EQ(r.finish, FinishReason::stop) << r.finish_raw;
      EXPECT_EQ(r.usage.output_tokens, 50);
      ASSERT_EQ(r.tool_calls.size(), 2u);
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(r.tool_calls[i].name, calls[i].name);
        EXPECT_EQ(json::parse(r.tool_calls[i].arguments), json::parse(calls[i].arguments));
        if (c.format != tw::Format::gemini) EXPECT_EQ(r.tool_calls[i].id, calls[i].id);
      }
      if (c.format == tw::Format::chat || c.format == tw::Format::responses)
        EXPECT_EQ(r.tool_calls[1].arguments, calls[1].arguments);  // the model's text, byte for byte
      if (c.format == tw::Format::gemini) {
        EXPECT_NE(r.tool_calls[0].id, r.tool_calls[1].id);  // synthesized, distinct
        EXPECT_EQ(r.tool_calls[1].signature, "sig-submit_kernel");
      }
      json body = pkb::testing::body_json(server.last_request());
      EXPECT_EQ(tw::tool_names(c.format, body), (std::vector<std::string>{"compile_kernel", "submit_kernel"}));
    }
}

TEST(ToolCalls, TheDeclaredSchemaTakesEachApisShape) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(name_of(c.format));
    LoopbackServer server;
    server.push(tw::reply(c.format, false, "ok", {}));
    ASSERT_TRUE(complete(server, c, false, tool_request()).ok());
    json body = pkb::testing::body_json(server.last_request());
    json schema = c.format == tw::Format::chat        ? body["tools"][0]["function"]["parameters"]
                  : c.format == tw::Format::anthropic ? body["tools"][0]["input_schema"]
                  : c.format == tw::Format::gemini    ? body["tools"][0]["functionDeclarations"][0]["parameters"]
                                                      : body["tools"][0]["parameters"];
    EXPECT_EQ(schema["properties"]["source"]["type"], "string");
    EXPECT_EQ(schema["required"], json::array({"source"}));
    // Gemini's schema subset has no additionalProperties; the others keep it (Responses' strict mode wants it).
    EXPECT_EQ(schema.contains("additionalProperties"), c.format != tw::Format::gemini);
    if (c.format == tw::Format::responses) EXPECT_EQ(body["tools"][0]["type"], "function");
    if (c.format == tw::Format::chat) EXPECT_EQ(body["tools"][0]["type"], "function");
  }
}

// An agent's third request: assistant text and two calls, their results (one an error), a nudge.
Request continued_request(tw::Format f) {
  Request r = tool_request();
  Message assistant{Message::Role::assistant, "Compiling both.", {}, {}};
  for (const auto& c : two_calls(f)) assistant.tool_calls.push_back({c.id, c.name, c.arguments, ""});
  if (f == tw::Format::gemini) {
    assistant.tool_calls[0].id = "pkb-call-0", assistant.tool_calls[1].id = "pkb-call-1";
    assistant.tool_calls[0].signature = "sig-0";
  }
  Message results{Message::Role::tool, "", {}, {}};
  results.tool_results = {{assistant.tool_calls[0].id, "compile_kernel", "ok", false},
                          {assistant.tool_calls[1].id, "submit_kernel", "error: bad \xff bytes", true}};
  r.conversation = {assistant, results, {Message::Role::user, "Please call a tool.", {}, {}}};
  return r;
}

TEST(ToolCalls, TheConversationIsSentBackInEachApisShape) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(name_of(c.format));
    LoopbackServer server;
    server.push(tw::reply(c.format, false, "done", {}));
    Request req = continued_request(c.format);
    Reply r = complete(server, c, false, req);
    ASSERT_TRUE(r.ok()) << r.error_message;
    json body = pkb::testing::body_json(server.last_request());
    auto results = tw::tool_results(c.format, body);
    ASSERT_EQ(results.size(), 2u) << body.dump(1);
    EXPECT_EQ(results[0].second, "ok");
    EXPECT_EQ(results[1].second, "error: bad \xef\xbf\xbd bytes");  // the body is JSON: U+FFFD stands in
    if (c.format != tw::Format::gemini) EXPECT_EQ(results[0].first, "call_a");
    if (c.format == tw::Format::gemini) EXPECT_EQ(results[0].first, "compile_kernel");  // no synthesized id sent
    EXPECT_EQ(tw::later_user_texts(c.format, body), std::vector<std::string>{"Please call a tool."});
    if (c.format == tw::Format::chat) {
      const json& m = body["messages"];
      ASSERT_EQ(m.size(), 6u);  // system, user, assistant, tool, tool, user
      EXPECT_EQ(m[2]["tool_calls"][1]["function"]["arguments"], two_calls(c.format)[1].arguments);
      EXPECT_EQ(m[2]["content"], "Compiling both.");
    }
    if (c.format == tw::Format::responses) {
      const json& in = body["input"];
      ASSERT_EQ(in.size(), 7u);  // user, assistant text, 2 function_call, 2 function_call_output, user
      EXPECT_EQ(in[2]["type"], "function_call");
      EXPECT_EQ(in[2]["call_id"], "call_a");
    }
    if (c.format == tw::Format::anthropic) {
      const json& m = body["messages"];
      ASSERT_EQ(m.size(), 3u);  // user, assistant, user (results and the nudge joined: roles alternate)
      EXPECT_EQ(m[1]["content"][1]["type"], "tool_use");
      EXPECT_EQ(m[1]["content"][1]["input"]["source"], "int x = 1;\n");
      EXPECT_EQ(m[2]["content"][1]["is_error"], true);
    }
    if (c.format == tw::Format::gemini) {
      const json& parts = body["contents"][1]["parts"];
      EXPECT_EQ(body["contents"][1]["role"], "model");
      EXPECT_EQ(parts[1]["functionCall"]["args"]["source"], "int x = 1;\n");
      EXPECT_FALSE(parts[1]["functionCall"].contains("id"));
      EXPECT_EQ(parts[1]["thoughtSignature"], "sig-0");
      EXPECT_EQ(body["contents"].size(), 3u);  // user, model, user (results and nudge)
    }
  }
}

TEST(ToolCalls, AnthropicMalformedStreamedArgumentsStayRaw) {
  LoopbackServer server;
  server.push(pkb::testing::sse_response(tw::anthropic_events("", {{"toolu_1", "compile_kernel", R"({"source": )"}})));
  Reply r = complete(server, cases()[2], true, tool_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"source": )");
}

// Compatible servers that stream tool-call deltas without an index (a new id starts the next call) and repeat the
// call's whole name in every delta: two calls, each named once, their arguments whole.
TEST(ToolCalls, ChatDeltasWithoutIndexOrWithRepeatedNamesStillMakeTheirCalls) {
  auto chunk = [](const json& delta, const json& finish = nullptr) {
    return pkb::testing::sse_event("", json{{"object", "chat.completion.chunk"},
                                            {"model", "m"},
                                            {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}}
                                           .dump());
  };
  auto piece = [](const std::string& id, const std::string& args) {
    json d = {{"function", {{"name", "compile_kernel"}, {"arguments", args}}}};
    if (!id.empty()) d["id"] = id;
    return json{{"tool_calls", {d}}};
  };
  LoopbackServer server;
  server.push(pkb::testing::sse_response({chunk({{"role", "assistant"}, {"content", ""}}),
                                          chunk(piece("call_a", R"({"source":)")), chunk(piece("", R"("a"})")),
                                          chunk(piece("call_b", R"({"source":)")), chunk(piece("call_b", R"("b"})")),
                                          chunk(json::object(), "tool_calls"), pkb::testing::sse_event("", "[DONE]")}));
  Reply r = complete(server, cases()[0], true, tool_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[0].id, "call_a");
  EXPECT_EQ(r.tool_calls[0].name, "compile_kernel");
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"source":"a"})");
  EXPECT_EQ(r.tool_calls[1].id, "call_b");
  EXPECT_EQ(r.tool_calls[1].name, "compile_kernel");
  EXPECT_EQ(r.tool_calls[1].arguments, R"({"source":"b"})");
}

TEST(ToolCalls, ResponsesCallsAreRebuiltFromDeltasWhenTheTerminalEventHasNoOutput) {
  LoopbackServer server;
  auto calls = two_calls(tw::Format::responses);
  server.push(pkb::testing::sse_response(tw::responses_events("", calls, false)));
  Reply r = complete(server, cases()[1], true, tool_request());
  ASSERT_TRUE(r.ok()) << r.error_message;
  ASSERT_EQ(r.tool_calls.size(), 2u);
  EXPECT_EQ(r.tool_calls[1].id, "call_b");
  EXPECT_EQ(r.tool_calls[1].arguments, calls[1].arguments);
}

TEST(ToolCalls, RecordsRoundTripAndTheCacheKeysOnTheConversation) {
  Reply r;
  r.text = "t";
  r.tool_calls = {{"id1", "compile_kernel", "{\"source\":\"x\"}", "sig"}};
  Reply back = reply_from_json(to_json(r));
  ASSERT_EQ(back.tool_calls.size(), 1u);
  EXPECT_EQ(back.tool_calls[0].signature, "sig");
  EXPECT_EQ(back.tool_calls[0].arguments, r.tool_calls[0].arguments);
  Request req = continued_request(tw::Format::chat);
  EXPECT_EQ(conversation_json(conversation_from_json(conversation_json(req.conversation))),
            conversation_json(req.conversation));
  ModelName name = parse_model_name("openai:gpt-4o");
  Request shorter = req;
  shorter.conversation.pop_back();
  EXPECT_NE(ReplyCache::key(name, req), ReplyCache::key(name, shorter));
  Request plain = tool_request();
  plain.tools.clear();
  EXPECT_NE(ReplyCache::key(name, plain), ReplyCache::key(name, tool_request()));
  plain.conversation.clear();
  Request single;
  single.system = plain.system, single.user = plain.user;
  EXPECT_EQ(ReplyCache::key_material(name, single).contains("tools"), false);  // old keys unchanged
}

}  // namespace
}  // namespace pkb::models
