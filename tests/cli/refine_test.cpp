// `pkb run --turns T` end to end on CPU ranks against a loopback server speaking each provider's wire format. The
// scripted model answers a kernel that does not compile, then, once it has seen the compiler's errors, one that
// is wrong, then, once it has seen the mismatch summary, a correct one. Checked: three records (turns 1-3),
// pass@1 0 after turn 1 and 1 after turn 3, the feedback text in the second and third requests as the server
// received them, the whole conversation resent each turn; resuming sends nothing and records nothing new; a turn
// whose request failed is asked again by the next invocation; a correct kernel stops early.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "../unit/test_util.h"
#include "core/files.h"
#include "loopback_server.h"
#include "model_test_util.h"
#include "spec/catalog.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::TempDir;

using test::cpu_fixture;

std::string answer(const std::string& fixture) { return "Here it is.\n```cuda\n" + cpu_fixture(fixture) + "\n```\n"; }

// How one wire format carries the conversation and an answer.
struct Wire {
  std::string provider;  // as in the model name
  std::string path;      // base URL path
  std::map<std::string, std::string> env;
  // (role, text) of every message of a request body, system instructions left out.
  std::function<std::vector<std::pair<std::string, std::string>>(const json&)> messages;
  std::function<std::string(const std::string&)> reply;
};

std::vector<std::pair<std::string, std::string>> role_content(const json& list) {
  std::vector<std::pair<std::string, std::string>> v;
  for (const auto& m : list)
    if (m["role"] != "system" && m["role"] != "developer") v.emplace_back(m["role"], m["content"]);
  return v;
}

Wire wire(const std::string& provider, const std::string& url) {
  Wire w;
  w.provider = provider;
  if (provider == "openai" || provider == "compat") {
    w.path = "/v1";
    w.env = provider == "openai"
                ? std::map<std::string, std::string>{{"OPENAI_API_KEY", "k"}, {"PKB_OPENAI_BASE_URL", url + "/v1"}}
                : std::map<std::string, std::string>{{"PKB_COMPAT_API_KEY", "k"}};
    w.messages = [](const json& b) { return role_content(b["messages"]); };
    w.reply = [](const std::string& text) {
      json b = json::parse(testing::chat_body(text));
      b["usage"] = {{"prompt_tokens", 100}, {"completion_tokens", 50}};
      return b.dump();
    };
  } else if (provider == "openai-responses") {
    w.env = {{"OPENAI_API_KEY", "k"}, {"PKB_OPENAI_RESPONSES_BASE_URL", url + "/v1"}};
    w.messages = [](const json& b) {
      if (b["input"].is_string()) return std::vector<std::pair<std::string, std::string>>{{"user", b["input"]}};
      return role_content(b["input"]);
    };
    w.reply = [](const std::string& text) {
      return json{{"status", "completed"},
                  {"model", "m"},
                  {"output", {{{"type", "message"}, {"content", {{{"type", "output_text"}, {"text", text}}}}}}},
                  {"usage", {{"input_tokens", 100}, {"output_tokens", 50}}}}
          .dump();
    };
  } else if (provider == "anthropic") {
    w.env = {{"ANTHROPIC_API_KEY", "k"}, {"PKB_ANTHROPIC_BASE_URL", url + "/v1"}};
    w.messages = [](const json& b) { return role_content(b["messages"]); };
    w.reply = [](const std::string& text) {
      return json{{"type", "message"},
                  {"content", {{{"type", "text"}, {"text", text}}}},
                  {"stop_reason", "end_turn"},
                  {"usage", {{"input_tokens", 100}, {"output_tokens", 50}}}}
          .dump();
    };
  } else {  // gemini
    w.env = {{"GEMINI_API_KEY", "k"}, {"PKB_GEMINI_BASE_URL", url + "/v1beta"}};
    w.messages = [](const json& b) {
      std::vector<std::pair<std::string, std::string>> v;
      for (const auto& c : b["contents"])
        v.emplace_back(c["role"] == "model" ? "assistant" : "user", c["parts"][0]["text"]);
      return v;
    };
    w.reply = [](const std::string& text) {
      return json{
          {"candidates", {{{"content", {{"role", "model"}, {"parts", {{{"text", text}}}}}}, {"finishReason", "STOP"}}}},
          {"usageMetadata", {{"promptTokenCount", 100}, {"candidatesTokenCount", 50}}}}
          .dump();
    };
  }
  return w;
}

// The scripted model: it fixes what the feedback of its last turn names, and nothing else.
void script(testing::LoopbackServer& server, const Wire& w) {
  server.set_responder([w](const testing::RecordedRequest& req) {
    auto msgs = w.messages(json::parse(req.body));
    const std::string& last = msgs.back().second;
    std::string fixture = last.find("Result: compile_error") != std::string::npos ? "wrong_value"
                          : last.find("Result: incorrect") != std::string::npos   ? "correct"
                          : msgs.size() == 1                                      ? "compile_error"
                                                                                  : "correct_but_slow";
    return testing::json_response(200, w.reply(answer(fixture)));
  });
}

std::vector<std::string> run_args(const std::string& model, const fs::path& out, int turns) {
  return pkb::test::joined(
      {{
           "run",      "--model",  model, "--problems", "1",       "--turns", std::to_string(turns),
           "--device", "cpu",      "-w",  "2",          "--param", "M=64",    "--param",
           "N=48",     "--trials", "1",   "--warmup",   "1",       "--iters", "3",
       },
       pkb::test::kShortTiming,
       {"--timeout",
        "30",  // no answer here hangs: only a loaded machine would reach it, and a correct kernel must stay correct
        "--out", out.string(), "--cache", PKB_TEST_CACHE, "--retry-base-ms", "1", "--max-attempts", "1"}});
}

std::vector<json> result_lines(const fs::path& run) {
  std::vector<json> v;
  std::ifstream in(run / "results.jsonl");
  for (std::string line; std::getline(in, line);) v.push_back(json::parse(line));
  return v;
}

std::string model_name(const Wire& w, const testing::LoopbackServer& server) {
  return w.provider == "compat" ? "compat:" + server.url() + "/v1@tiny" : w.provider + ":tiny-model";
}

void expect_three_turns(const std::string& provider) {
  SCOPED_TRACE(provider);
  testing::LoopbackServer server;
  Wire w = wire(provider, server.url());
  script(server, w);
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  test::CliRun r = test::run_cli(PKB_BINARY, run_args(model_name(w, server), run, 3), w.env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  auto lines = result_lines(run);
  ASSERT_EQ(lines.size(), 3u) << r.err;
  std::vector<std::string> statuses;
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(lines[t]["turn"], t + 1);
    EXPECT_EQ(lines[t]["sample"], 0);
    EXPECT_EQ(lines[t]["generation"]["output_tokens"], 50) << lines[t]["generation"].dump();
    statuses.push_back(lines[t]["status"]);
  }
  EXPECT_EQ(statuses, (std::vector<std::string>{"compile_error", "incorrect", "correct"}));
  EXPECT_TRUE(fs::exists(run / "turn_2/candidates/001_allreduce/sample_0.cu"));
  EXPECT_TRUE(fs::exists(run / "turn_3/raw/001_allreduce/sample_0.txt"));

  json rep = json::parse(read_text_file(run / "report.json"));
  ASSERT_EQ(rep["turns"].size(), 3u) << rep.dump(2);
  EXPECT_EQ(rep["turns"][0]["pass_at_k"][0]["mean"], 0.0);
  EXPECT_EQ(rep["turns"][1]["pass_at_k"][0]["mean"], 0.0);
  EXPECT_EQ(rep["turns"][2]["pass_at_k"][0]["mean"], 1.0);
  EXPECT_EQ(rep["turns"][2]["added"]["pass_at_k"][0]["mean"], 1.0);
  EXPECT_EQ(rep["turns"][2]["newly_solved"], 1);
  EXPECT_EQ(rep["turns"][1]["asked"], 1);
  EXPECT_EQ(rep["aggregate"]["pass_at_k"][0]["mean"], 1.0);  // a sample counts as its best turn
  EXPECT_EQ(rep["problems"][0]["n"], 1);
  EXPECT_NE(read_text_file(run / "summary.md").find("## Turns"), std::string::npos);

  // What the server received: the feedback, and the whole conversation each turn.
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  auto first = w.messages(json::parse(reqs[0].body)), second = w.messages(json::parse(reqs[1].body)),
       third = w.messages(json::parse(reqs[2].body));
  EXPECT_EQ(first.size(), 1u);
  ASSERT_EQ(second.size(), 3u);
  ASSERT_EQ(third.size(), 5u);
  EXPECT_EQ(second[0], first[0]);
  EXPECT_EQ(second[1].first, "assistant");
  EXPECT_EQ(second[1].second, answer("compile_error"));
  const std::string& fb2 = second[2].second;
  EXPECT_NE(fb2.find("Result: compile_error"), std::string::npos) << fb2;
  EXPECT_NE(fb2.find("Compiler output (trimmed)"), std::string::npos) << fb2;
  EXPECT_NE(fb2.find("error: expected"), std::string::npos) << fb2;  // the compiler's own words
  EXPECT_NE(fb2.find("turn 2 of at most 3"), std::string::npos) << fb2;
  EXPECT_EQ(third[2], second[2]);
  EXPECT_EQ(third[3].second, answer("wrong_value"));
  const std::string& fb3 = third[4].second;
  EXPECT_NE(fb3.find("Result: incorrect"), std::string::npos) << fb3;
  EXPECT_NE(fb3.find("output 'out', rank 0, trial 0: 1 elements outside tolerance"), std::string::npos) << fb3;
  EXPECT_NE(fb3.find("first bad element at flat index"), std::string::npos) << fb3;
  EXPECT_NE(fb3.find("max abs error"), std::string::npos) << fb3;
}

TEST(Refine, OpenAIChat) { expect_three_turns("openai"); }
TEST(Refine, OpenAIResponses) { expect_three_turns("openai-responses"); }
TEST(Refine, Anthropic) { expect_three_turns("anthropic"); }
TEST(Refine, Gemini) { expect_three_turns("gemini"); }
TEST(Refine, OpenAICompatible) { expect_three_turns("compat"); }

// Turn 2's request fails (the service, not the model): the run is incomplete with turn 1 recorded; the next
// invocation continues at turn 2 (turn 1 answered from the cache, not re-evaluated) and finishes; a third
// invocation sends nothing and records nothing.
TEST(Refine, ResumeContinuesAtTheFirstUnfinishedTurn) {
  testing::LoopbackServer server;
  Wire w = wire("compat", server.url());
  server.push(testing::json_response(200, w.reply(answer("compile_error"))));
  server.push(testing::json_response(503, R"({"error":{"message":"overloaded"}})"));
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  auto args = run_args(model_name(w, server), run, 3);
  test::CliRun r = test::run_cli(PKB_BINARY, args, w.env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  ASSERT_EQ(result_lines(run).size(), 1u) << r.err;
  EXPECT_EQ(server.request_count(), 2);

  script(server, w);
  test::CliRun again = test::run_cli(PKB_BINARY, args, w.env);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.err.find("resuming: 1 of 1 samples already recorded"), std::string::npos) << again.err;
  auto lines = result_lines(run);
  ASSERT_EQ(lines.size(), 3u) << again.err;
  EXPECT_EQ(lines[1]["turn"], 2);
  EXPECT_EQ(lines[2]["status"], "correct");
  EXPECT_EQ(server.request_count(), 4);  // turns 2 and 3; turn 1 came from the cache

  test::CliRun third = test::run_cli(PKB_BINARY, args, w.env);
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(server.request_count(), 4);
  EXPECT_EQ(result_lines(run).size(), 3u);
  EXPECT_NE(third.err.find("turn 3: resuming: 1 of 1 samples already recorded"), std::string::npos) << third.err;
}

// A correct kernel faster than --stop-speedup ends its conversation; offline models cannot take feedback.
TEST(Refine, StopsEarlyAndRefusesOfflineModels) {
  testing::LoopbackServer server;
  Wire w = wire("compat", server.url());
  server.set_fallback(testing::json_response(200, w.reply(answer("correct"))));
  TempDir tmp;
  auto args = run_args(model_name(w, server), tmp.path() / "run", 3);
  args.insert(args.end(), {"--stop-speedup", "0"});
  test::CliRun r = test::run_cli(PKB_BINARY, args, w.env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(server.request_count(), 1) << r.err;
  EXPECT_EQ(result_lines(tmp.path() / "run").size(), 1u) << r.err;

  auto bad = run_args("expert", tmp.path() / "expert", 2);
  test::CliRun refused = test::run_cli(PKB_BINARY, bad);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--turns 2 needs a language model"), std::string::npos) << refused.err;
  args.back() = "fast";
  test::CliRun typo = test::run_cli(PKB_BINARY, args, w.env);
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("--stop-speedup: 'fast' is neither"), std::string::npos) << typo.err;
}

}  // namespace
}  // namespace pkb

namespace pkb {
namespace {

// `pkb prompt --turn` shows the second turn: the conversation and a follow-up with example feedback.
TEST(Refine, PromptShowsTheFollowUpWithExampleFeedback) {
  test::CliRun r = test::run_cli(PKB_BINARY, {"prompt", "1", "--turn", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json req = json::parse(r.out);
  ASSERT_EQ(req["history"].size(), 1u);
  EXPECT_NE(req["history"][0]["user"].get<std::string>().find("001_allreduce"), std::string::npos);
  EXPECT_NE(req["user"].get<std::string>().find("Result: incorrect"), std::string::npos) << req["user"];
  test::CliRun text = test::run_cli(PKB_BINARY, {"prompt", "1", "--feedback", "compile_error", "--turns", "5"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("===== user (turn 2, example feedback) ====="), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Compiler output (trimmed)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("turn 2 of at most 5"), std::string::npos) << text.out;
  test::CliRun bad = test::run_cli(PKB_BINARY, {"prompt", "1", "--feedback", "fine"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no example feedback for 'fine'"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace pkb
