// `pkb run --agent` end to end on CPU ranks against scripted tool-calling models on loopback, in each provider's wire
// format, streamed and buffered. The scripted agents decide from what the server received (the tool results so
// far), as a real model would: compile a kernel that does not compile, read the errors, evaluate a fixed one, submit
// it; call tools badly (unknown name, malformed or missing or non-string arguments, an oversized source), send an
// empty reply, call a tool after submitting; spend a budget; never call a tool; get killed mid-step and resumed.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "../unit/leftovers.h"
#include "../unit/test_util.h"
#include "core/files.h"
#include "loopback_server.h"
#include "spec/catalog.h"
#include "tool_wire.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;
namespace tw = testing::tools;
using json = nlohmann::json;
using test::TempDir;

using test::cpu_fixture;

std::string source_args(const std::string& source) { return json{{"source", source}}.dump(); }

std::map<std::string, std::string> env_for(const std::string& provider, const std::string& url) {
  if (provider == "openai") return {{"OPENAI_API_KEY", "k"}, {"PKB_OPENAI_BASE_URL", url + "/v1"}};
  if (provider == "openai-responses") return {{"OPENAI_API_KEY", "k"}, {"PKB_OPENAI_RESPONSES_BASE_URL", url + "/v1"}};
  if (provider == "anthropic") return {{"ANTHROPIC_API_KEY", "k"}, {"PKB_ANTHROPIC_BASE_URL", url + "/v1"}};
  return {{"GEMINI_API_KEY", "k"}, {"PKB_GEMINI_BASE_URL", url + "/v1beta"}};
}

std::vector<std::string> agent_args(const std::string& provider, const fs::path& out, bool streamed,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> args = test::joined({{"run",        "--agent", "--model",  provider + ":tiny-model",
                                                 "--problems", "1",       "--device", "cpu",
                                                 "-w",         "2",       "--param",  "M=64",
                                                 "--param",    "N=48",    "--trials", "1",
                                                 "--warmup",   "1",       "--iters",  "3"},
                                                test::kShortTiming,
                                                {"--timeout", "30", "--out", out.string(), "--cache", PKB_TEST_CACHE,
                                                 "--retry-base-ms", "1", "--max-attempts", "1"}});
  if (!streamed) args.push_back("--no-stream");
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<json> lines_of(const fs::path& file) {
  std::vector<json> v;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) v.push_back(json::parse(line));
  return v;
}

fs::path transcript(const fs::path& run, int sample = 0) {
  return run / "agent/001_allreduce" / ("sample_" + std::to_string(sample) + ".jsonl");
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string call_id(tw::Format f, size_t n) { return f == tw::Format::gemini ? "" : "call_" + std::to_string(n); }

// Compile a broken kernel, fix it after reading the errors, evaluate it, submit it.
void script_fix_flow(testing::LoopbackServer& server, tw::Format f, bool streamed) {
  server.set_responder([f, streamed](const testing::RecordedRequest& req) {
    auto results = tw::tool_results(f, json::parse(req.body));
    if (results.empty())
      return tw::reply(f, streamed, "Compiling first.",
                       {{call_id(f, 0), "compile_kernel", source_args(cpu_fixture("compile_error"))}});
    const std::string& last = results.back().second;
    if (contains(last, "compile_error"))
      return tw::reply(f, streamed, "", {{call_id(f, 1), "evaluate_kernel", source_args(cpu_fixture("correct"))}});
    if (contains(last, "Result: correct"))
      return tw::reply(f, streamed, "Submitting.",
                       {{call_id(f, 2), "submit_kernel", source_args(cpu_fixture("correct"))}});
    return tw::reply(f, streamed, "I am lost.", {});
  });
}

void expect_fix_flow(const std::string& provider, bool streamed) {
  SCOPED_TRACE(provider + (streamed ? " streamed" : " buffered"));
  tw::Format f = tw::format_of(provider);
  testing::LoopbackServer server;
  script_fix_flow(server, f, streamed);
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  test::CliRun r = test::run_cli(PKB_BINARY, agent_args(provider, run, streamed), env_for(provider, server.url()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;

  auto records = lines_of(run / "results.jsonl");
  ASSERT_EQ(records.size(), 1u) << r.err;
  const json& rec = records[0];
  EXPECT_EQ(rec["status"], "correct") << rec.dump(1);
  EXPECT_EQ(rec["agent"]["end"], "submitted");
  EXPECT_EQ(rec["agent"]["steps"], 3);
  EXPECT_EQ(rec["agent"]["requests"], 3);
  EXPECT_EQ(rec["agent"]["tools_used"], json({"compile_kernel", "evaluate_kernel", "submit_kernel"}));
  EXPECT_EQ(rec["agent"]["output_tokens"], 150);
  EXPECT_EQ(rec["generation"]["output_tokens"], 150) << rec.dump(1);
  EXPECT_GT(rec["agent"]["gpu_s"].get<double>(), 0);
  // Judged with a seed no tool evaluation used.
  EXPECT_NE(rec["seed"], json(1)) << rec.dump(1);

  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  json first = json::parse(reqs[0].body), third = json::parse(reqs[2].body);
  EXPECT_EQ(tw::tool_names(f, first), (std::vector<std::string>{"compile_kernel", "evaluate_kernel", "submit_kernel"}));
  auto results = tw::tool_results(f, third);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_TRUE(contains(results[0].second, "error")) << results[0].second;
  EXPECT_TRUE(contains(results[1].second, "Result: correct")) << results[1].second;

  // The transcript: every request, reply and tool result; the results byte for byte as the server got them.
  auto t = lines_of(transcript(run));
  std::vector<std::string> types, contents;
  for (const json& l : t) {
    types.push_back(l["type"]);
    if (l["type"] == "tool_result") contents.push_back(l["content"]);
  }
  EXPECT_EQ(types, (std::vector<std::string>{"start", "request", "reply", "tool_result", "request", "reply",
                                             "tool_result", "request", "reply", "tool_result", "end"}));
  ASSERT_EQ(contents.size(), 3u);
  EXPECT_EQ(contents[0], results[0].second);
  EXPECT_EQ(contents[1], results[1].second);

  json rep = json::parse(read_text_file(run / "report.json"));
  ASSERT_TRUE(rep.contains("agent")) << rep.dump(1);
  // Solved within 3 tool calls, not within 2.
  for (const auto& row : rep["agent"]["steps"]) {
    int s = row["steps"];
    EXPECT_EQ(row["pass_at_k"][0]["mean"], s >= 3 ? 1.0 : 0.0) << row.dump();
  }
  EXPECT_TRUE(contains(read_text_file(run / "summary.md"), "## Agent")) << read_text_file(run / "summary.md");
}

TEST(Agent, FixFlowOpenAIChatStreamed) { expect_fix_flow("openai", true); }
TEST(Agent, FixFlowResponsesStreamed) { expect_fix_flow("openai-responses", true); }
TEST(Agent, FixFlowAnthropicStreamed) { expect_fix_flow("anthropic", true); }
TEST(Agent, FixFlowGeminiStreamed) { expect_fix_flow("gemini", true); }

// One reply of parallel bad calls and a good one; then an empty reply; then submit with a call after it.
void expect_bad_tool_use(const std::string& provider, bool streamed, size_t big) {
  SCOPED_TRACE(provider + (streamed ? " streamed" : " buffered"));
  tw::Format f = tw::format_of(provider);
  testing::LoopbackServer server;
  std::string correct = cpu_fixture("correct");
  server.set_responder([=](const testing::RecordedRequest& req) {
    json body = json::parse(req.body);
    auto results = tw::tool_results(f, body);
    if (results.empty())
      return tw::reply(f, streamed, "Trying things.",
                       {{call_id(f, 0), "run_shell", source_args("ls")},
                        {call_id(f, 1), "compile_kernel", "{not json"},
                        {call_id(f, 2), "compile_kernel", R"({"src":"int x;"})"},
                        {call_id(f, 3), "compile_kernel", R"({"source":42})"},
                        {call_id(f, 4), "compile_kernel", source_args(std::string(big, 'x'))},
                        {call_id(f, 5), "compile_kernel", source_args(correct)}});
    if (tw::later_user_texts(f, body).empty()) return tw::reply(f, streamed, "", {});
    return tw::reply(f, streamed, "",
                     {{call_id(f, 6), "submit_kernel", source_args(correct)},
                      {call_id(f, 7), "compile_kernel", source_args(correct)}});
  });
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  test::CliRun r = test::run_cli(PKB_BINARY, agent_args(provider, run, streamed), env_for(provider, server.url()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto records = lines_of(run / "results.jsonl");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["status"], "correct") << records[0].dump(1);
  EXPECT_EQ(records[0]["agent"]["steps"], 8);  // 6 calls, the empty reply, submit; not the call after it
  EXPECT_EQ(records[0]["agent"]["tool_calls"]["invalid"], 5);

  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  auto results = tw::tool_results(f, json::parse(reqs[1].body));
  ASSERT_EQ(results.size(), 6u);
  EXPECT_TRUE(contains(results[0].second, "unknown tool 'run_shell'")) << results[0].second;
  // Anthropic and Gemini hand back arguments as objects: malformed JSON text reaches pkb only in their streams
  // (Anthropic) or never; the buffered APIs show it as a call without `source`.
  bool raw_args = f == tw::Format::chat || f == tw::Format::responses || (f == tw::Format::anthropic && streamed);
  EXPECT_TRUE(contains(results[1].second, raw_args ? "not a JSON object" : "`source` is missing")) << results[1].second;
  EXPECT_TRUE(contains(results[2].second, "`source` is missing")) << results[2].second;
  EXPECT_TRUE(contains(results[3].second, "`source` is not a string")) << results[3].second;
  EXPECT_TRUE(contains(results[4].second, "the limit is 1048576 bytes")) << results[4].second;
  EXPECT_EQ(results[5].second, "ok");
  EXPECT_TRUE(contains(tw::later_user_texts(f, json::parse(reqs[2].body)).at(0), "Your reply was empty"));
  auto t = lines_of(transcript(run));
  bool not_run = false;
  for (const json& l : t)
    not_run = not_run || (l["type"] == "tool_result" && contains(l["content"], "not run: submit_kernel already"));
  EXPECT_TRUE(not_run);
}

TEST(Agent, BadToolUseOpenAIChatBufferedTenMegabytes) { expect_bad_tool_use("openai", false, 10u << 20); }
TEST(Agent, BadToolUseResponsesBuffered) { expect_bad_tool_use("openai-responses", false, (1u << 20) + 1); }
TEST(Agent, BadToolUseAnthropicBuffered) { expect_bad_tool_use("anthropic", false, (1u << 20) + 1); }
TEST(Agent, BadToolUseAnthropicStreamed) { expect_bad_tool_use("anthropic", true, (1u << 20) + 1); }
TEST(Agent, BadToolUseGeminiBuffered) { expect_bad_tool_use("gemini", false, (1u << 20) + 1); }

// The steps budget ends the sample before its third call is asked for; the tokens budget after the reply that
// crossed it, before its call runs. Neither is judged.
TEST(Agent, BudgetsEndTheSampleUnjudged) {
  testing::LoopbackServer server;
  server.set_responder([](const testing::RecordedRequest& req) {
    size_t n = tw::tool_results(tw::Format::chat, json::parse(req.body)).size();
    return tw::reply(tw::Format::chat, false, "",
                     {{"c" + std::to_string(n), "compile_kernel", source_args(cpu_fixture("compile_error"))}});
  });
  TempDir tmp;
  auto env = env_for("openai", server.url());
  test::CliRun r =
      test::run_cli(PKB_BINARY, agent_args("openai", tmp.path() / "steps", false, {"--agent-steps", "2"}), env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto rec = lines_of(tmp.path() / "steps/results.jsonl");
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0]["status"], "budget_exhausted");
  EXPECT_EQ(rec[0]["agent"]["steps"], 2);
  EXPECT_TRUE(contains(rec[0]["message"], "steps")) << rec[0]["message"];
  EXPECT_EQ(server.request_count(), 2);

  test::CliRun tok =
      test::run_cli(PKB_BINARY, agent_args("openai", tmp.path() / "tokens", false, {"--agent-tokens", "200"}), env);
  ASSERT_EQ(tok.exit_code, 0) << tok.out << tok.err;
  rec = lines_of(tmp.path() / "tokens/results.jsonl");
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0]["status"], "budget_exhausted");
  EXPECT_EQ(rec[0]["agent"]["requests"], 2);  // 150 tokens each: the second crossed 200
  EXPECT_EQ(rec[0]["agent"]["steps"], 1);
  EXPECT_TRUE(contains(rec[0]["message"], "tokens")) << rec[0]["message"];
  json rep = json::parse(read_text_file(tmp.path() / "tokens/report.json"));
  EXPECT_EQ(rep["aggregate"]["pass_at_k"][0]["mean"], 0.0);
}

// The GPU budget refuses the second evaluate_kernel once the first spent it; the wall budget ends the sample when
// a slow reply used it up, before the reply's call runs.
TEST(Agent, GpuAndWallBudgets) {
  testing::LoopbackServer server;
  server.set_responder([](const testing::RecordedRequest& req) {
    size_t n = tw::tool_results(tw::Format::chat, json::parse(req.body)).size();
    testing::ScriptedResponse r =
        tw::reply(tw::Format::chat, false, "",
                  {{"c" + std::to_string(n), "evaluate_kernel", source_args(cpu_fixture("correct"))}});
    if (contains(req.body, "seconds of wall time")) r.delay_s = 1.5;
    return r;
  });
  TempDir tmp;
  auto env = env_for("openai", server.url());
  test::CliRun r =
      test::run_cli(PKB_BINARY, agent_args("openai", tmp.path() / "gpu", false, {"--agent-gpu-s", "0.01"}), env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto rec = lines_of(tmp.path() / "gpu/results.jsonl");
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0]["status"], "budget_exhausted");
  EXPECT_EQ(rec[0]["agent"]["tool_calls"]["evaluate_kernel"], 1);
  EXPECT_TRUE(contains(rec[0]["message"], "gpu")) << rec[0]["message"];

  test::CliRun wall =
      test::run_cli(PKB_BINARY, agent_args("openai", tmp.path() / "wall", false, {"--agent-wall-s", "1"}), env);
  ASSERT_EQ(wall.exit_code, 0) << wall.out << wall.err;
  rec = lines_of(tmp.path() / "wall/results.jsonl");
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0]["status"], "budget_exhausted");
  EXPECT_EQ(rec[0]["agent"]["steps"], 0);
  EXPECT_TRUE(contains(rec[0]["message"], "wall")) << rec[0]["message"];
}

// A model that never calls a tool: a fenced block is its answer (judged); prose alone is no_code.
TEST(Agent, AModelThatNeverCallsATool) {
  testing::LoopbackServer server;
  server.push(tw::reply(tw::Format::gemini, true, "Here.\n```cuda\n" + cpu_fixture("correct") + "\n```\n", {}));
  server.push(tw::reply(tw::Format::gemini, true, "I would rather not.", {}));
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  test::CliRun r =
      test::run_cli(PKB_BINARY, agent_args("gemini", run, true, {"--samples", "2"}), env_for("gemini", server.url()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto rec = lines_of(run / "results.jsonl");
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec[0]["status"], "correct");
  EXPECT_EQ(rec[0]["agent"]["end"], "answered");
  EXPECT_EQ(rec[0]["agent"]["steps"], 0);
  EXPECT_EQ(rec[1]["status"], "generation_failed");
  EXPECT_EQ(rec[1]["generation"]["status"], "no_code") << rec[1].dump(1);
}

// Starts pkb with `env` added, in its own process group; SIGKILL via kill_group.
pid_t spawn(const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  setpgid(0, 0);
  for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
  int null = open("/dev/null", O_WRONLY);
  dup2(null, 1), dup2(null, 2);
  std::vector<char*> argv = {const_cast<char*>(PKB_BINARY)};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(PKB_BINARY, argv.data());
  _exit(127);
}

// Killed while its second request is in flight, with half a line written: the resumed run keeps the first step (its
// reply is not asked again, its tool not run again) and finishes; a third invocation does nothing.
TEST(Agent, KilledMidStepResumesLosingOnlyThatStep) {
  static std::atomic<bool> hang{true};
  testing::LoopbackServer server;
  tw::Format f = tw::Format::chat;
  server.set_responder([f](const testing::RecordedRequest& req) {
    auto results = tw::tool_results(f, json::parse(req.body));
    if (results.empty())
      return tw::reply(f, true, "", {{"c0", "compile_kernel", source_args(cpu_fixture("compile_error"))}});
    if (results.size() == 1) {
      testing::ScriptedResponse r =
          tw::reply(f, true, "", {{"c1", "submit_kernel", source_args(cpu_fixture("correct"))}});
      if (hang) r.delay_s = 60;
      return r;
    }
    return tw::reply(f, true, "?", {});
  });
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  auto args = agent_args("openai", run, true);
  auto env = env_for("openai", server.url());
  pid_t pid = spawn(args, env);
  for (int i = 0; i < 600 && server.request_count() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(server.request_count(), 2);
  kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_FALSE(fs::exists(run / "results.jsonl") && fs::file_size(run / "results.jsonl") > 0);
  { std::ofstream(transcript(run), std::ios::app) << R"({"type":"tool_res)"; }  // a line cut by the kill

  hang = false;
  test::CliRun r = test::run_cli(PKB_BINARY, args, env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(server.request_count(), 3);  // the request in flight again, nothing before it
  auto rec = lines_of(run / "results.jsonl");
  ASSERT_EQ(rec.size(), 1u);
  EXPECT_EQ(rec[0]["status"], "correct");
  EXPECT_EQ(rec[0]["agent"]["steps"], 2);
  int compiles = 0;
  for (const json& l : lines_of(transcript(run)))
    compiles += l["type"] == "tool_result" && l["name"] == "compile_kernel";
  EXPECT_EQ(compiles, 1);

  test::CliRun again = test::run_cli(PKB_BINARY, args, env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(server.request_count(), 3);
  EXPECT_EQ(lines_of(run / "results.jsonl").size(), 1u);
}

// `pkb run --agent` killed by SIGKILL at random moments of a sample (asking the model, compiling, evaluating through
// the tool, judging the submitted kernel): 5 s later no process of the run is left. The run's files, the cache too,
// all lie under one directory, so that every process of the run names it or works there.
TEST(Agent, KilledAtRandomMomentsLeavesNothing) {
  const tw::Format f = tw::Format::chat;
  testing::LoopbackServer server;
  server.set_responder([f](const testing::RecordedRequest& req) {
    auto results = tw::tool_results(f, json::parse(req.body));
    if (results.empty())
      return tw::reply(f, false, "", {{"c0", "evaluate_kernel", source_args(cpu_fixture("correct"))}});
    return tw::reply(f, false, "", {{"c1", "submit_kernel", source_args(cpu_fixture("correct"))}});
  });
  TempDir tmp;
  auto args = agent_args("openai", tmp.path() / "run", false);
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == "--cache") args[i + 1] = (tmp.path() / "cache").string();
  const unsigned seed = std::random_device{}();
  auto env = env_for("openai", server.url());
  env["TMPDIR"] = tmp.path().string();  // where a killed pkb's seal directory is left
  auto left = test::leftovers_after_random_kills(PKB_BINARY, args, env, 10, 8.0, seed,
                                                 [&] { fs::remove_all(tmp.path() / "run"); });
  for (size_t i = 0; i < left.size(); ++i) EXPECT_EQ(left[i], 0) << "kill " << i << " (seed " << seed << ")";
}

// The service rejects the second request of a conversation (HTTP 400): the sample stays unrecorded, its transcript
// says why, the run exits 1 as incomplete; the next invocation resumes from the transcript, sends that request again
// (its first reply comes from the cache, not the server) and records the verdict.
TEST(Agent, AServiceErrorMidConversationLeavesTheSampleToTheNextInvocation) {
  const tw::Format f = tw::Format::chat;
  testing::LoopbackServer server;
  std::atomic<bool> reject{true};  // read by the server's thread
  server.set_responder([&](const testing::RecordedRequest& req) {
    auto results = tw::tool_results(f, json::parse(req.body));
    if (results.empty())
      return tw::reply(f, false, "", {{call_id(f, 0), "compile_kernel", source_args(cpu_fixture("correct"))}});
    if (reject) return testing::json_response(400, R"({"error":{"message":"context too long","type":"invalid"}})");
    return tw::reply(f, false, "", {{call_id(f, 1), "submit_kernel", source_args(cpu_fixture("correct"))}});
  });
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  test::CliRun first = test::run_cli(PKB_BINARY, agent_args("openai", run, false), env_for("openai", server.url()));
  EXPECT_EQ(first.exit_code, 1) << first.out << first.err;
  EXPECT_FALSE(fs::exists(run / "results.jsonl") && !lines_of(run / "results.jsonl").empty());
  auto lines = lines_of(transcript(run));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back()["type"], "service_error") << lines.back().dump();
  EXPECT_EQ(server.requests().size(), 2u);

  reject = false;
  test::CliRun second = test::run_cli(PKB_BINARY, agent_args("openai", run, false), env_for("openai", server.url()));
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  auto records = lines_of(run / "results.jsonl");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["status"], "correct") << records[0].dump(1);
  EXPECT_EQ(records[0]["agent"]["steps"], 2);
  EXPECT_EQ(server.requests().size(), 3u) << "the first reply was asked for again";
}

TEST(Agent, RefusesOfflineModelsAndTurns) {
  TempDir tmp;
  test::CliRun r = test::run_cli(
      PKB_BINARY, {"run", "--agent", "--model", "expert", "--device", "cpu", "--out", (tmp.path() / "x").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err, "--agent needs a language model")) << r.err;
}

}  // namespace
}  // namespace pkb
