// Replies without an answer (issue 43, item A), over the loopback server: a reply that says nothing and gives no
// stop reason (an Anthropic stream of message_start and message_stop, a Responses terminal event without output, a
// Chat choice without content or finish_reason, a Gemini candidate without parts or finishReason) is the server's
// fault, streamed or buffered alike: a retried bad_response, never an answer, so never a cached no_code, and the
// sample gets the answer the retry brings. A genuine answer without code stays the model's no_code.
#include <gtest/gtest.h>

#include <filesystem>

#include "fixtures.h"
#include "model_test_util.h"
#include "models/cache.h"
#include "models/dispatch.h"
#include "models/extract.h"

namespace pkb::models {
namespace {
namespace unanswered {  // the unity build puts this file beside stream_test.cpp's helpers of the same names

namespace fx = pkb::testing::fixtures;
using json = nlohmann::json;
using pkb::testing::json_response;
using pkb::testing::LoopbackServer;
using pkb::testing::ScriptedResponse;
using pkb::testing::sse_event;
using pkb::testing::sse_response;

const std::string kAnswer = pkb::testing::kCudaAnswer;
const std::string kNoCode = "I cannot write that kernel.";

class TempCache {
 public:
  TempCache() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pkb-unanswered-XXXXXX").string();
    dir_ = ::mkdtemp(tmpl.data());
  }
  ~TempCache() { std::filesystem::remove_all(dir_); }
  ReplyCache cache() const { return ReplyCache(dir_); }

 private:
  std::filesystem::path dir_;
};

// One wire format's replies, each streamed and buffered: without an answer, and answering `text`.
struct Format {
  std::string spec, path;
  std::vector<std::string> (*events)(const std::string& text);  // text "": the stream without an answer
  std::string (*body)(const std::string& text);                 // text "": the same reply buffered
};

std::vector<std::string> chat_events(const std::string& text) {
  if (!text.empty()) return pkb::testing::chat_stream_events(text);
  json role = {
      {"id", "x"},
      {"object", "chat.completion.chunk"},
      {"model", "m"},
      {"choices", {{{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"finish_reason", nullptr}}}}};
  return {sse_event("", role.dump()), sse_event("", "[DONE]")};
}
std::string chat_body(const std::string& text) {
  if (!text.empty()) return pkb::testing::chat_body(text);
  json b = json::parse(pkb::testing::chat_body(""));
  b["choices"][0]["finish_reason"] = nullptr;
  return b.dump();
}

json responses_object(const std::string& text) {
  json r = json::parse(fx::kResponses);
  if (text.empty())
    r.erase("output");
  else
    r["output"][0]["content"][0]["text"] = text;
  return r;
}
std::vector<std::string> responses_events(const std::string& text) {
  json created = responses_object(text);
  created["status"] = "in_progress";
  created["output"] = json::array();
  return {sse_event("response.created", json{{"type", "response.created"}, {"response", created}}.dump()),
          sse_event("response.completed",
                    json{{"type", "response.completed"}, {"response", responses_object(text)}}.dump())};
}
std::string responses_body(const std::string& text) { return responses_object(text).dump(); }

json anthropic_message(const std::string& text) {
  json m = json::parse(fx::kAnthropic);
  m["content"] = json::array();
  m["stop_reason"] = nullptr;
  if (!text.empty()) m["content"].push_back({{"type", "text"}, {"text", text}}), m["stop_reason"] = "end_turn";
  return m;
}
std::vector<std::string> anthropic_events(const std::string& text) {
  auto ev = [](const std::string& type, json j) {
    j["type"] = type;
    return sse_event(type, j.dump());
  };
  std::vector<std::string> out = {ev("message_start", {{"message", anthropic_message("")}})};
  if (!text.empty()) {
    out.push_back(ev("content_block_start", {{"index", 0}, {"content_block", {{"type", "text"}, {"text", ""}}}}));
    out.push_back(ev("content_block_delta", {{"index", 0}, {"delta", {{"type", "text_delta"}, {"text", text}}}}));
    out.push_back(ev("content_block_stop", {{"index", 0}}));
    out.push_back(ev("message_delta", {{"delta", {{"stop_reason", "end_turn"}}}, {"usage", {{"output_tokens", 6}}}}));
  }
  out.push_back(ev("message_stop", json::object()));
  return out;
}
std::string anthropic_body(const std::string& text) { return anthropic_message(text).dump(); }

json gemini_chunk(const std::string& text) {
  json parts = json::array();
  if (!text.empty()) parts.push_back({{"text", text}});
  json c = {{"candidates", {{{"content", {{"role", "model"}, {"parts", parts}}}, {"index", 0}}}},
            {"usageMetadata", {{"promptTokenCount", 9}, {"totalTokenCount", 9}}},
            {"modelVersion", "gemini-2.5-pro"}};
  if (!text.empty()) c["candidates"][0]["finishReason"] = "STOP";
  return c;
}
// Gemini's streams have no terminal event: the one without an answer ends, cleanly, after a chunk without parts.
std::vector<std::string> gemini_events(const std::string& text) { return {sse_event("", gemini_chunk(text).dump())}; }
std::string gemini_body(const std::string& text) { return gemini_chunk(text).dump(); }

const Format kChat{"openai:gpt-5.4", "/v1", chat_events, chat_body};
const Format kResponses{"openai-responses:o1", "/v1", responses_events, responses_body};
const Format kAnthropic{"anthropic:claude-sonnet-4-5", "/v1", anthropic_events, anthropic_body};
const Format kGemini{"gemini:gemini-2.5-pro", "/v1beta", gemini_events, gemini_body};

ScriptedResponse response(const Format& f, bool stream, const std::string& text) {
  return stream ? sse_response(f.events(text), 0.01) : json_response(200, f.body(text));
}

ProviderOptions options(const LoopbackServer& server, const Format& f, bool stream) {
  ProviderOptions opt = pkb::testing::fast_options(server, f.path);
  opt.stream = stream;
  return opt;
}

// Without an answer: retried, and the retry's answer is the sample's (its kernel extracted) and the one cached; a
// server that never answers leaves a bad_response, and nothing in the cache.
void expect_retried_never_cached(const Format& f) {
  for (bool stream : {true, false}) {
    SCOPED_TRACE(f.spec + (stream ? " streamed" : " buffered"));
    TempCache dir;
    ReplyCache cache = dir.cache();
    LoopbackServer server;
    server.push(response(f, stream, ""));
    server.push(response(f, stream, kAnswer));
    auto provider = make_provider(f.spec, options(server, f, stream));
    Reply r = complete_cached(*provider, &cache, Request{.user = "Write a kernel."});
    ASSERT_TRUE(r.ok()) << r.error_message;
    EXPECT_EQ(r.attempts, 2);
    EXPECT_EQ(server.request_count(), 2);
    EXPECT_EQ(extract_code(r.text, r.finish).status, CodeStatus::ok) << r.text;
    std::optional<Reply> cached = cache.load(provider->name(), Request{.user = "Write a kernel."});
    ASSERT_TRUE(cached);
    EXPECT_EQ(cached->text, r.text);

    LoopbackServer silent;
    silent.set_fallback(response(f, stream, ""));
    ProviderOptions opt = options(silent, f, stream);
    opt.retry.max_attempts = 2;
    auto again = make_provider(f.spec, opt);
    Request other{.user = "Write another kernel."};
    Reply failed = complete_cached(*again, &cache, other);
    EXPECT_EQ(failed.error, ErrorKind::bad_response) << failed.error_message;
    EXPECT_EQ(silent.request_count(), 2) << "a reply without an answer is asked again";
    EXPECT_FALSE(cache.load(again->name(), other)) << "a reply without an answer was cached";
  }
}

TEST(Unanswered, ChatIsRetriedAndNeverCached) { expect_retried_never_cached(kChat); }
TEST(Unanswered, ResponsesIsRetriedAndNeverCached) { expect_retried_never_cached(kResponses); }
TEST(Unanswered, AnthropicIsRetriedAndNeverCached) { expect_retried_never_cached(kAnthropic); }
TEST(Unanswered, GeminiIsRetriedAndNeverCached) { expect_retried_never_cached(kGemini); }

// The model answered without code (or, with a stop reason, with nothing at all): its no_code, asked once and cached.
TEST(Unanswered, AGenuineAnswerWithoutCodeStaysNoCode) {
  for (const Format* f : {&kChat, &kResponses, &kAnthropic, &kGemini})
    for (bool stream : {true, false}) {
      SCOPED_TRACE(f->spec + (stream ? " streamed" : " buffered"));
      TempCache dir;
      ReplyCache cache = dir.cache();
      LoopbackServer server;
      server.set_fallback(response(*f, stream, kNoCode));
      auto provider = make_provider(f->spec, options(server, *f, stream));
      Reply r = complete_cached(*provider, &cache, Request{.user = "k"});
      ASSERT_TRUE(r.ok()) << r.error_message;
      EXPECT_EQ(r.text, kNoCode);
      EXPECT_EQ(extract_code(r.text, r.finish).status, CodeStatus::no_code);
      EXPECT_EQ(server.request_count(), 1);
      EXPECT_TRUE(cache.load(provider->name(), Request{.user = "k"}));
    }
  // An Anthropic turn ended (end_turn) with no content block: empty, but the model's.
  json ended = anthropic_message("");
  ended["stop_reason"] = "end_turn";
  LoopbackServer server;
  server.set_fallback(json_response(200, ended.dump()));
  Reply r = make_provider(kAnthropic.spec, options(server, kAnthropic, false))->complete(Request{.user = "k"});
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(extract_code(r.text, r.finish).status, CodeStatus::no_code);
  EXPECT_EQ(server.request_count(), 1);
}

}  // namespace unanswered
}  // namespace
}  // namespace pkb::models
