// pkb prompt and pkb generate as users run them: the real binary as a subprocess, talking to the scripted
// loopback server of tests/models as an OpenAI-compatible endpoint, or using the offline models.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "../unit/test_util.h"
#include "launch/process.h"
#include "loopback_server.h"
#include "model_test_util.h"
#include "prompt/prompt.h"
#include "spec/catalog.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::TempDir;
using test::write_file;
using testing::chat_body;
using testing::json_response;
using testing::LoopbackServer;
using testing::ScriptedResponse;

using test::CliRun;

CliRun pkb_cli(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  return test::run_cli(PKB_BINARY, args, env, 240);
}

std::vector<json> records(const fs::path& out) {
  std::ifstream in(out / "generations.jsonl");
  std::vector<json> v;
  for (std::string line; std::getline(in, line);) v.push_back(json::parse(line));
  return v;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

const std::string kKernel =
    "#include <pkb/abi.h>\nextern \"C\" int pkb_run(pkb_context* ctx, const pkb_tensor* in, int n_in, pkb_tensor* out,"
    " int n_out) {\n  return 0;\n}\n";
const std::string kAnswer = "The design: one kernel.\n\n```cuda\n" + kKernel + "```\n";

std::vector<std::string> generate_args(const LoopbackServer& s, const fs::path& out, const std::string& problems,
                                       int k) {
  return {"generate",
          "--model",
          "compat:" + s.url() + "/v1@any",
          "--problems",
          problems,
          "--samples",
          std::to_string(k),
          "-w",
          "2",
          "--out",
          out.string(),
          "--retry-base-ms",
          "10",
          "--concurrency",
          "4"};
}

std::vector<std::string> folders(const std::string& selection) {
  std::vector<std::string> v;
  Catalog c = load_catalog(repo_root() / "problems");
  for (const ProblemSpec* p : c.select(selection)) v.push_back(p->folder());
  return v;
}

TEST(Generate, EndToEndWithRetriesThenFromCache) {
  LoopbackServer server;
  ScriptedResponse limited = json_response(429, R"({"error":{"message":"slow down","type":"rate_limit"}})");
  limited.headers.push_back({"Retry-After", "1"});
  server.push(limited);
  server.push(json_response(500, R"({"error":{"message":"boom"}})"));
  server.set_fallback(json_response(200, chat_body(kAnswer)));
  TempDir tmp;
  fs::path out = tmp.path() / "gen";

  CliRun first = pkb_cli(generate_args(server, out, "1-8", 2));
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_EQ(server.request_count(), 18);  // 16 samples + the 429 and the 500, each retried once
  EXPECT_NE(first.err.find("pkb generate: 16/16 done"), std::string::npos) << first.err;
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 16u);
  int attempts = 0;
  std::set<std::string> seen;
  for (const auto& r : recs) {
    EXPECT_EQ(r["status"], "ok") << r.dump();
    EXPECT_EQ(r["from_cache"], false);
    EXPECT_EQ(r["finish"], "stop");
    EXPECT_EQ(r["input_tokens"], 5);
    EXPECT_TRUE(r["cost_usd"].is_null()) << "a compat model has no price";
    attempts += r["attempts"].get<int>();
    seen.insert(r["candidate"].get<std::string>());
    EXPECT_EQ(slurp(out / r["candidate"].get<std::string>()), kKernel);
    EXPECT_EQ(slurp(out / r["raw"].get<std::string>()), kAnswer);
  }
  EXPECT_EQ(attempts, 18);
  for (const auto& f : folders("1-8"))
    for (int k = 0; k < 2; ++k)
      EXPECT_TRUE(seen.count("candidates/" + f + "/sample_" + std::to_string(k) + ".cu")) << f << " " << k;
  // The request carried our prompt: the system prompt and the problem's reference program.
  json body = json::parse(server.requests().back().body);
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_NE(body["messages"][1]["content"].get<std::string>().find("def solution("), std::string::npos);

  CliRun second = pkb_cli(generate_args(server, out, "1-8", 2));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(server.request_count(), 18) << "the rerun sent requests";
  recs = records(out);
  ASSERT_EQ(recs.size(), 16u);
  for (const auto& r : recs) {
    EXPECT_EQ(r["status"], "ok");
    EXPECT_EQ(r["from_cache"], true);
    EXPECT_EQ(slurp(out / r["candidate"].get<std::string>()), kKernel);
  }
  EXPECT_NE(second.err.find("16 from cache"), std::string::npos) << second.err;
  json manifest = json::parse(slurp(out / "generation.json"));
  EXPECT_EQ(manifest["topology"], "h200_2");
  EXPECT_EQ(manifest["counts"]["ok"], 16);
  json saved = json::parse(slurp(out / "prompts" / "001_allreduce.json"));
  EXPECT_EQ(saved["system"], body["messages"][0]["content"]);
}

// A priced model: a rerun from the cache spends nothing new and shows what the answers had cost apart; the
// record says what was sent (GPT-5 models take no temperature, so the 0.5 asked for was not sent).
TEST(Generate, CachedRerunSpendsNothingAndRecordsWhatWasSent) {
  LoopbackServer server;
  server.set_fallback(json_response(200, chat_body(kAnswer)));
  TempDir tmp;
  fs::path out = tmp.path() / "gen";
  std::vector<std::string> args = {"generate", "--model",    "openai:gpt-5.4", "--problems", "1",
                                   "--out",    out.string(), "--temperature",  "0.5"};
  std::map<std::string, std::string> env = {{"OPENAI_API_KEY", "sk-test-0123456789"},
                                            {"PKB_OPENAI_BASE_URL", server.url() + "/v1"}};
  CliRun first = pkb_cli(args, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  json r = records(out)[0];
  ASSERT_TRUE(r["cost_usd"].is_number()) << r.dump();
  EXPECT_EQ(r["spent_usd"], r["cost_usd"]);
  EXPECT_FALSE(r["sent"].contains("temperature")) << r["sent"].dump();
  EXPECT_EQ(r["sent"]["model"], "gpt-5.4");
  EXPECT_NE(first.err.find("new, $0.0000 from cache"), std::string::npos) << first.err;
  CliRun second = pkb_cli(args, env);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  json again = records(out)[0];
  EXPECT_EQ(again["from_cache"], true);
  EXPECT_EQ(again["spent_usd"], 0.0);
  EXPECT_EQ(again["cost_usd"], r["cost_usd"]);
  EXPECT_NE(second.err.find("$0.0000 new, $"), std::string::npos) << second.err;
  EXPECT_EQ(server.request_count(), 1);
}

TEST(Generate, AnswersWithoutUsableCodeKeepTheRawReply) {
  LoopbackServer server;
  server.set_responder([](const testing::RecordedRequest& req) {
    if (req.body.find("001_allreduce") != std::string::npos)
      return json_response(200, chat_body("I would use a ring, but here is no code."));
    return json_response(200, chat_body("Start.\n```cuda\nextern \"C\" int pkb_run(", "length"));
  });
  TempDir tmp;
  fs::path out = tmp.path() / "gen";
  CliRun run = pkb_cli(generate_args(server, out, "1-2", 1));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0]["status"], "no_code");
  EXPECT_TRUE(recs[0]["candidate"].is_null());
  EXPECT_EQ(slurp(out / recs[0]["raw"].get<std::string>()), "I would use a ring, but here is no code.");
  EXPECT_FALSE(fs::exists(out / "candidates" / "001_allreduce" / "sample_0.cu"));
  EXPECT_EQ(recs[1]["status"], "truncated");
  EXPECT_EQ(recs[1]["finish"], "length");
  EXPECT_TRUE(recs[1]["candidate"].is_null());
  EXPECT_TRUE(fs::exists(out / "raw" / "002_allgather" / "sample_0.txt"));
}

TEST(Generate, FailedRequestsAreRecordedAndExitOne) {
  LoopbackServer server;
  server.set_fallback(json_response(500, R"({"error":{"message":"down for maintenance"}})"));
  TempDir tmp;
  fs::path out = tmp.path() / "gen";
  auto args = generate_args(server, out, "1", 1);
  args.insert(args.end(), {"--max-attempts", "2"});
  CliRun run = pkb_cli(args);
  EXPECT_EQ(run.exit_code, 1) << run.err;
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["status"], "error");
  EXPECT_EQ(recs[0]["error"], "server");
  EXPECT_EQ(recs[0]["attempts"], 2);
  EXPECT_NE(recs[0]["message"].get<std::string>().find("down for maintenance"), std::string::npos);
}

// A faulty server's bytes that are not UTF-8 (an error page in another encoding, a binary body, a JSON string
// with a raw 0xff byte) never break the records or the run: the request is recorded as failed, the message
// readable, and generations.jsonl stays valid JSON.
TEST(Generate, BytesThatAreNotUtf8FromTheServerAreRecordedReadably) {
  for (const std::string& reply :
       {std::string("\xff\xfe<html>\xc3 Wartung \xe9t\xe9</html>"),
        std::string(R"({"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":)") +
            "{\"role\":\"assistant\",\"content\":\"caf\xe9 \xff\"},\"finish_reason\":\"stop\"}]}"}) {
    for (int status : {500, 200}) {
      LoopbackServer server;
      server.set_fallback(json_response(status, reply));
      TempDir tmp;
      fs::path out = tmp.path() / "gen";
      auto args = generate_args(server, out, "1", 1);
      args.insert(args.end(), {"--max-attempts", "1"});
      CliRun run = pkb_cli(args);
      EXPECT_EQ(run.exit_code, 1) << status << run.err;
      auto recs = records(out);  // parses every line: valid JSON
      ASSERT_EQ(recs.size(), 1u) << status << run.err;
      EXPECT_EQ(recs[0]["status"], "error") << status;
      EXPECT_FALSE(recs[0]["message"].get<std::string>().empty());
    }
  }
}

// Streaming is the default: the answer arrives as events, a stream that stalls past --idle-timeout is retried
// (and counted as maybe billed), and the record says the answer was streamed. --no-stream sends no stream field.
TEST(Generate, StreamsByDefaultRetriesAStalledStreamAndNoStreamBuffers) {
  LoopbackServer server;
  ScriptedResponse stalled = testing::sse_response({testing::chat_stream_events(kAnswer)[0]});
  stalled.hang_s = 10;
  server.push(stalled);
  server.push(testing::sse_response(testing::chat_stream_events(kAnswer), 0.02));
  TempDir tmp;
  fs::path out = tmp.path() / "gen";
  auto args = generate_args(server, out, "1", 1);
  args.insert(args.end(), {"--idle-timeout", "0.3", "--http-timeout", "0.05"});  // a buffered attempt would time out
  CliRun run = pkb_cli(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_NE(run.err.find("idle timeout"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("may be billed"), std::string::npos) << run.err;
  json body = json::parse(server.last_request().body);
  EXPECT_EQ(body["stream"], true);
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["status"], "ok") << recs[0].dump();
  EXPECT_EQ(recs[0]["streamed"], true);
  EXPECT_EQ(recs[0]["broken_streams"], 1);
  EXPECT_EQ(recs[0]["attempts"], 2);
  EXPECT_EQ(recs[0]["input_tokens"], 5);
  EXPECT_EQ(slurp(out / recs[0]["candidate"].get<std::string>()), kKernel);
  EXPECT_EQ(json::parse(slurp(out / "generation.json"))["stream"], true);

  LoopbackServer plain;
  plain.set_fallback(json_response(200, chat_body(kAnswer)));
  fs::path out2 = tmp.path() / "gen2";
  auto buffered = generate_args(plain, out2, "1", 1);
  buffered.push_back("--no-stream");
  CliRun r2 = pkb_cli(buffered);
  ASSERT_EQ(r2.exit_code, 0) << r2.err;
  EXPECT_FALSE(json::parse(plain.last_request().body).contains("stream")) << plain.last_request().body;
  EXPECT_EQ(records(out2)[0]["streamed"], false);
  EXPECT_EQ(json::parse(slurp(out2 / "generation.json"))["stream"], false);
}

// A stream that ends without an answer (a role chunk, then [DONE]: no content, no finish_reason) is the server's
// fault (issue 43): asked again, the sample gets the answer that follows, and the cache holds that answer, so a rerun
// sends nothing.
TEST(Generate, AStreamWithoutAnAnswerIsAskedAgainNotRecordedAsNoCode) {
  std::vector<std::string> events = testing::chat_stream_events(kAnswer);
  LoopbackServer server;
  server.push(testing::sse_response({events.front(), events.back()}));
  server.push(testing::sse_response(events));
  TempDir tmp;
  fs::path out = tmp.path() / "gen";
  CliRun run = pkb_cli(generate_args(server, out, "1", 1));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(server.request_count(), 2);
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0]["status"], "ok") << recs[0].dump();
  EXPECT_EQ(recs[0]["attempts"], 2);
  EXPECT_EQ(slurp(out / recs[0]["candidate"].get<std::string>()), kKernel);
  CliRun again = pkb_cli(generate_args(server, out, "1", 1));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(server.request_count(), 2) << "the answer was not the one cached";
  EXPECT_EQ(records(out)[0]["status"], "ok");
}

// A repository root holding copies of some shipped problems (PKB_ROOT), for the offline models.
fs::path toy_root(const fs::path& dir, const std::vector<std::string>& problem_folders) {
  fs::create_directories(dir / "problems");
  for (const auto& f : problem_folders)
    fs::copy(repo_root() / "problems" / f, dir / "problems" / f, fs::copy_options::recursive);
  fs::copy(repo_root() / "pricing", dir / "pricing", fs::copy_options::recursive);
  return dir;
}

TEST(Generate, ForbiddenWorldSizeIsSkippedWithoutARequest) {
  TempDir tmp;
  fs::path root = toy_root(tmp.path() / "root", {"001_allreduce", "002_allgather"});
  for (const char* dir : {"prompts", "topologies", "harness/include"}) {
    fs::create_directories((root / dir).parent_path());
    fs::copy(repo_root() / dir, root / dir, fs::copy_options::recursive);
  }
  fs::path spec = root / "problems" / "001_allreduce" / "problem.json";
  json j = json::parse(slurp(spec));
  j["world_size"]["max"] = 1;
  write_file(spec, j.dump(2));
  LoopbackServer server;
  server.set_fallback(json_response(200, chat_body(kAnswer)));
  fs::path out = tmp.path() / "gen";
  CliRun run = pkb_cli(generate_args(server, out, "1-2", 1), {{"PKB_ROOT", root.string()}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(server.request_count(), 1);
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 2u);
  EXPECT_EQ(recs[0]["status"], "skipped");
  EXPECT_NE(recs[0]["message"].get<std::string>().find("above world_size.max=1"), std::string::npos) << recs[0];
  EXPECT_EQ(recs[1]["status"], "ok");
}

TEST(Generate, ExpertCopiesSolutionsAndRecordsProblemsWithout) {
  TempDir tmp;
  fs::path root = toy_root(tmp.path() / "root", {"001_allreduce", "002_allgather"});
  write_file(root / "problems" / "001_allreduce" / "solution.cu", kKernel);
  fs::remove(root / "problems" / "002_allgather" / "solution.cu");  // a problem without an expert kernel
  fs::path out = tmp.path() / "gen";
  CliRun run = pkb_cli({"generate", "--model", "expert", "--problems", "1-2", "--samples", "2", "--out", out.string()},
                       {{"PKB_ROOT", root.string()}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 4u);
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(recs[k]["status"], "ok");
    EXPECT_EQ(slurp(out / "candidates" / "001_allreduce" / ("sample_" + std::to_string(k) + ".cu")), kKernel);
    EXPECT_EQ(recs[2 + k]["status"], "no_solution");
    EXPECT_TRUE(recs[2 + k]["candidate"].is_null());
  }
  EXPECT_FALSE(fs::exists(out / "candidates" / "002_allgather"));
}

TEST(Generate, ReplayTakesBothLayoutsAndRecordsWhatIsMissing) {
  TempDir tmp;
  fs::path dir = tmp.path() / "replay";
  write_file(dir / "001_allreduce" / "sample_0.cu", kKernel + "// per sample\n");
  write_file(dir / "002_allgather.cu", kKernel + "// one per problem\n");
  fs::path out = tmp.path() / "gen";
  CliRun run = pkb_cli({"generate", "--model", "replay:" + dir.string(), "--problems", "1-3", "--out", out.string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto recs = records(out);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0]["status"], "ok");
  EXPECT_EQ(slurp(out / "candidates" / "001_allreduce" / "sample_0.cu"), kKernel + "// per sample\n");
  EXPECT_EQ(recs[1]["status"], "ok");
  EXPECT_EQ(slurp(out / "candidates" / "002_allgather" / "sample_0.cu"), kKernel + "// one per problem\n");
  EXPECT_EQ(recs[2]["status"], "missing");
  EXPECT_NE(recs[2]["message"].get<std::string>().find("003_broadcast"), std::string::npos);

  CliRun bad = pkb_cli({"generate", "--model", "replay:" + (tmp.path() / "nope").string(), "--out", out.string()});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("no such directory"), std::string::npos) << bad.err;
}

TEST(Generate, PromptCommandPrintsWhatWouldBeSent) {
  prompt::PromptOptions o;
  o.world = 4;
  Catalog c = load_catalog(repo_root() / "problems");
  prompt::Prompt expected = prompt::build_prompt(*c.find(5), o);
  CliRun text = pkb_cli({"prompt", "5", "-w", "4"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out, "===== system =====\n" + expected.system + "\n===== user =====\n" + expected.user + "\n");
  CliRun j = pkb_cli({"prompt", "scatter", "-w", "4", "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  json req = json::parse(j.out);
  EXPECT_EQ(req["system"], expected.system);
  EXPECT_EQ(req["user"], expected.user);
  EXPECT_EQ(req["sample_index"], 0);
  CliRun zero = pkb_cli({"prompt", "5", "-w", "4", "--variant", "zero-shot"});
  EXPECT_EQ(zero.out.find("Worked example"), std::string::npos);
}

TEST(Generate, UsageErrorsExitTwoWithOneLine) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"prompt", "1", "--topology", "no_such_machine"},
                                             {"prompt", "5", "-w", "4", "--topology", "h200_2"},
                                             {"prompt", "1-2"},
                                             {"prompt", "1", "--param", "M"},
                                             {"generate", "--model", "nosuch:model", "--problems", "1"}}) {
    CliRun r = pkb_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << " " << r.err;
    EXPECT_EQ(r.err.rfind("pkb: error: ", 0), 0u) << r.err;
  }
}

}  // namespace
}  // namespace pkb
