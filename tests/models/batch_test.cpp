// The dispatcher (bounded concurrency, ordering, progress) and the reply cache, over real sockets.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "fixtures.h"
#include "model_test_util.h"
#include "models/dispatch.h"

namespace pkb::models {
namespace {

using pkb::testing::chat_body;
using pkb::testing::fast_options;
using pkb::testing::json_response;
using pkb::testing::LoopbackServer;
using pkb::testing::ScriptedResponse;

constexpr const char* kBatchKey = "sk-test-SECRET-0123456789";

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "pkb-models-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::vector<Request> numbered_requests(int n) {
  std::vector<Request> out;
  for (int i = 0; i < n; ++i) {
    Request r;
    r.user = "prompt " + std::to_string(i);
    out.push_back(r);
  }
  return out;
}

TEST(Dispatch, ConcurrencyIsBoundedAndActuallyOverlaps) {
  LoopbackServer server;
  ScriptedResponse slow = json_response(200, chat_body("ok"));
  slow.delay_s = 0.25;
  server.set_fallback(slow);
  auto p = make_provider("openai:gpt-4o", fast_options(server));
  std::set<size_t> seen;
  size_t last_done = 0;
  DispatchOptions opt;
  opt.max_in_flight = 3;
  opt.on_reply = [&](const Progress& pr) {
    seen.insert(pr.index);
    EXPECT_EQ(pr.done, last_done + 1);
    EXPECT_EQ(pr.total, 9u);
    last_done = pr.done;
  };
  auto replies = run_requests(*p, numbered_requests(9), opt);
  ASSERT_EQ(replies.size(), 9u);
  for (const auto& r : replies) EXPECT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(seen.size(), 9u);
  EXPECT_EQ(server.request_count(), 9);
  EXPECT_LE(server.max_concurrent(), 3);
  EXPECT_GE(server.max_concurrent(), 2);
}

TEST(Dispatch, ResultsComeBackInRequestOrder) {
  // The server echoes each prompt and answers later prompts sooner, so completion order is reversed.
  LoopbackServer server;
  server.set_responder([](const pkb::testing::RecordedRequest& req) {
    std::string prompt = pkb::testing::body_json(req)["messages"][0]["content"];
    ScriptedResponse r = json_response(200, chat_body("echo " + prompt));
    r.delay_s = 0.05 * (8 - std::stoi(prompt.substr(prompt.find(' ') + 1)));
    return r;
  });
  auto p = make_provider("vllm:m", fast_options(server));
  std::vector<size_t> completion_order;
  DispatchOptions opt;
  opt.max_in_flight = 4;
  opt.on_reply = [&](const Progress& pr) { completion_order.push_back(pr.index); };
  auto replies = run_requests(*p, numbered_requests(8), opt);
  ASSERT_EQ(replies.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(replies[i].text, "echo prompt " + std::to_string(i));
  EXPECT_FALSE(std::is_sorted(completion_order.begin(), completion_order.end()));  // really out of order
}

std::string read_all_files(const std::filesystem::path& dir) {
  std::string all;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir)) {
    if (!f.is_regular_file()) continue;
    std::ifstream in(f.path());
    std::stringstream s;
    s << in.rdbuf();
    all += s.str();
  }
  return all;
}

// With a bad key every request fails the same way: the batch stops at the first 401 instead of sending the
// rest, and the requests not sent say why.
TEST(Dispatch, ANonRetryableFailureStopsTheBatch) {
  LoopbackServer server;
  server.set_fallback(json_response(
      401,
      R"({"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}})"));
  auto provider = make_provider("openai:gpt-4o", fast_options(server));
  DispatchOptions opt;
  opt.max_in_flight = 1;
  auto replies = run_requests(*provider, numbered_requests(6), opt);
  EXPECT_EQ(server.request_count(), 1);
  EXPECT_EQ(replies[0].error, ErrorKind::auth);
  for (size_t i = 1; i < replies.size(); ++i) {
    EXPECT_EQ(replies[i].error, ErrorKind::not_sent) << i;
    EXPECT_NE(replies[i].error_message.find("Incorrect API key provided"), std::string::npos)
        << replies[i].error_message;
  }
}

// A 400 is usually about its request (a prompt longer than the model's context): the two requests of group "b"
// get one and the batch goes on to "c" and "d". The same 400 for requests of two different groups is the
// configuration's fault (a parameter the model refuses): the batch stops there.
TEST(Dispatch, A400StopsTheBatchOnlyWhenTwoGroupsGetTheSameOne) {
  const std::string too_long =
      R"({"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error"}})";
  LoopbackServer server;
  server.set_responder([&](const pkb::testing::RecordedRequest& req) {
    std::string prompt = pkb::testing::body_json(req)["messages"][0]["content"];
    return prompt.rfind("b ", 0) == 0 ? json_response(400, too_long) : json_response(200, chat_body("ok"));
  });
  auto provider = make_provider("openai:gpt-4o", fast_options(server));
  std::vector<Request> reqs = numbered_requests(6);
  DispatchOptions opt;
  opt.max_in_flight = 1;
  opt.group_of = {"a", "b", "b", "c", "d", "d"};
  for (size_t i = 0; i < reqs.size(); ++i) reqs[i].user = opt.group_of[i] + " " + reqs[i].user;
  BatchStop stop;
  opt.stop = &stop;
  auto replies = run_requests(*provider, reqs, opt);
  EXPECT_EQ(server.request_count(), 6);
  EXPECT_EQ(stop.reason(), "");
  EXPECT_EQ(replies[1].error, ErrorKind::bad_request);
  EXPECT_EQ(replies[2].error, ErrorKind::bad_request);
  EXPECT_FALSE(stop.configuration_fault(replies[1]));
  for (size_t i : {0, 3, 4, 5}) EXPECT_TRUE(replies[i].ok()) << i << replies[i].error_message;

  LoopbackServer refused;  // every request: the same 400
  refused.set_fallback(json_response(
      400, R"({"error":{"message":"Unsupported parameter: 'temperature'","type":"invalid_request_error"}})"));
  auto p2 = make_provider("openai:gpt-4o", fast_options(refused));
  BatchStop stop2;
  opt.stop = &stop2;
  replies = run_requests(*p2, reqs, opt);
  EXPECT_EQ(refused.request_count(), 2);  // a, then b: the second group with that 400
  EXPECT_NE(stop2.reason().find("the same rejection for requests of 2 different problems"), std::string::npos)
      << stop2.reason();
  EXPECT_NE(stop2.reason().find("Unsupported parameter"), std::string::npos) << stop2.reason();
  for (size_t i : {0, 1}) EXPECT_TRUE(stop2.configuration_fault(replies[i])) << i;
  for (size_t i : {2, 3, 4, 5}) EXPECT_EQ(replies[i].error, ErrorKind::not_sent) << i;
}

TEST(Cache, HitSendsNoRequest) {
  TempDir dir;
  ReplyCache cache(dir.path());
  LoopbackServer server;
  server.set_fallback(json_response(200, chat_body(pkb::testing::kCudaAnswer)));
  auto p = make_provider("openai:gpt-4o", fast_options(server));
  Request req;
  req.user = "kernel please";
  Reply first = complete_cached(*p, &cache, req);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(server.request_count(), 1);

  Reply second = complete_cached(*p, &cache, req);
  EXPECT_EQ(server.request_count(), 1);  // unchanged
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.text, first.text);
  EXPECT_EQ(second.usage.output_tokens, first.usage.output_tokens);
  EXPECT_EQ(second.finish, first.finish);
}

TEST(Cache, KeyDependsOnWhatShapesTheAnswerOnly) {
  ModelName a = parse_model_name("openai:gpt-4o");
  ModelName b = a;
  b.base_url = "http://elsewhere/v1";
  Request req;
  req.user = "u";
  EXPECT_EQ(ReplyCache::key(a, req), ReplyCache::key(b, req));  // base URL does not matter
  Request sample1 = req;
  sample1.sample_index = 1;
  Request hot = req;
  hot.temperature = 0.9;
  Request longer = req;
  longer.max_output_tokens = 100;
  Request extra = req;
  extra.extra = {{"reasoning_effort", "high"}};
  Request sys = req;
  sys.system = "s";
  for (const Request* r : {&sample1, &hot, &longer, &extra, &sys})
    EXPECT_NE(ReplyCache::key(a, req), ReplyCache::key(a, *r));
  EXPECT_NE(ReplyCache::key(a, req), ReplyCache::key(parse_model_name("openai-responses:gpt-4o"), req));
  EXPECT_EQ(ReplyCache::key(a, req).size(), 64u);
}

TEST(Cache, ApiKeyNeverReachesTheCacheDirectory) {
  TempDir dir;
  ReplyCache cache(dir.path());
  LoopbackServer server;
  server.set_fallback(json_response(200, chat_body(pkb::testing::kCudaAnswer)));
  auto p = make_provider("anthropic:claude-opus-4-7", fast_options(server));
  Request req;
  req.user = "kernel";
  server.set_fallback(json_response(200, pkb::testing::fixtures::kAnthropic));
  ASSERT_TRUE(complete_cached(*p, &cache, req).ok());
  std::string all = read_all_files(dir.path());
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.find(kBatchKey), std::string::npos);
  EXPECT_EQ(all.find("SECRET"), std::string::npos);
  EXPECT_EQ(all.find("127.0.0.1"), std::string::npos);  // nor the base URL
}

TEST(Cache, EveryReplyIsOnDiskAsSoonAsItArrives) {
  TempDir dir;
  ReplyCache cache(dir.path());
  LoopbackServer server;
  server.push(json_response(200, chat_body("first")));
  server.set_fallback(json_response(503, "{}"));  // everything after the first fails
  auto p = make_provider("openai:gpt-4o", fast_options(server));
  auto reqs = numbered_requests(3);
  size_t on_disk_when_second_finished = 0;
  DispatchOptions opt;
  opt.max_in_flight = 1;
  opt.cache = &cache;
  opt.on_reply = [&](const Progress& pr) {
    if (pr.done == 2) {
      for (const auto& f : std::filesystem::recursive_directory_iterator(dir.path()))
        on_disk_when_second_finished += f.is_regular_file();
    }
  };
  auto replies = run_requests(*p, reqs, opt);
  EXPECT_TRUE(replies[0].ok());
  EXPECT_EQ(replies[1].error, ErrorKind::server);
  EXPECT_EQ(on_disk_when_second_finished, 1u);  // the success, and no failure
  EXPECT_TRUE(cache.load(p->name(), reqs[0]).has_value());
  EXPECT_FALSE(cache.load(p->name(), reqs[1]).has_value());
  // No temporary files left behind.
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (f.is_regular_file()) {
      EXPECT_EQ(f.path().extension(), ".json") << f.path();
    }
  }
}

TEST(Cache, NoCodeAndTruncatedAnswersAreCachedTransportErrorsAreNot) {
  TempDir dir;
  ReplyCache cache(dir.path());
  LoopbackServer server;
  server.push(json_response(200, chat_body("no code here")));
  server.push(json_response(200, chat_body("```cuda\nint pkb_run(", "length")));
  auto p = make_provider("openai:gpt-4o", fast_options(server));
  auto reqs = numbered_requests(2);
  EXPECT_TRUE(complete_cached(*p, &cache, reqs[0]).ok());
  EXPECT_TRUE(complete_cached(*p, &cache, reqs[1]).ok());
  EXPECT_TRUE(cache.load(p->name(), reqs[0]).has_value());
  auto truncated = cache.load(p->name(), reqs[1]);
  ASSERT_TRUE(truncated.has_value());
  EXPECT_EQ(truncated->finish, FinishReason::length);

  ProviderOptions refused;
  refused.base_url = "http://127.0.0.1:" + std::to_string(pkb::testing::unused_port()) + "/v1";
  refused.api_key = "k";
  refused.retry = {1, 0.01, 0.01, 1};
  auto dead = make_provider("openai:gpt-4o", refused);
  Request other;
  other.user = "unreachable";
  EXPECT_EQ(complete_cached(*dead, &cache, other).error, ErrorKind::transport);
  EXPECT_FALSE(cache.load(dead->name(), other).has_value());
}

TEST(Cache, CorruptEntryIsAMissNotACrash) {
  TempDir dir;
  ReplyCache cache(dir.path());
  ModelName name = parse_model_name("openai:gpt-4o");
  Request req;
  req.user = "x";
  auto path = cache.path_for(ReplyCache::key(name, req));
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << "{ half written";
  EXPECT_FALSE(cache.load(name, req).has_value());
}

TEST(Cache, StoredEntryRecordsTheRequestAndReply) {
  TempDir dir;
  ReplyCache cache(dir.path());
  ModelName name = parse_model_name("deepseek:deepseek-v4-pro");
  Request req;
  req.system = "sys";
  req.user = "usr";
  req.sample_index = 3;
  Reply reply;
  reply.text = "answer";
  reply.finish = FinishReason::stop;
  ASSERT_TRUE(cache.store(name, req, reply));
  std::ifstream in(cache.path_for(ReplyCache::key(name, req)));
  auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["schema"], "pkb.llm_cache/1");
  EXPECT_EQ(j["provider"], "deepseek");
  EXPECT_EQ(j["request"]["sample_index"], 3);
  EXPECT_EQ(j["request"]["system"], "sys");
  EXPECT_EQ(j["reply"]["text"], "answer");
  Reply failed;
  failed.error = ErrorKind::timeout;
  EXPECT_FALSE(cache.store(name, req, failed));
}

}  // namespace
}  // namespace pkb::models
