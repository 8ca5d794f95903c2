// `pkb run` as users run it, on CPU ranks: a replayed mix of good, wrong and hanging kernels lands in the right
// counts; a second invocation redoes nothing; failed generations (a model answering without code) count as failed
// samples; a run directory made with other settings is refused; without a GPU the run still exits 0 with a
// report that says the GPU evaluations were skipped. Killing a run midway is tests/cli/run_kill_resume.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "../unit/test_util.h"
#include "core/files.h"
#include "launch/process.h"
#include "loopback_server.h"
#include "model_test_util.h"
#include "spec/catalog.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using test::TempDir;
using test::write_file;

using test::CliRun;

CliRun pkb_cli(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  return test::run_cli(PKB_BINARY, args, env);
}

// A CPU fixture as one self-contained file: generated candidates land in a folder without fixture.h.
std::string cpu_fixture(const std::string& name) {
  fs::path dir = repo_root() / "tests/fixtures/cpu";
  std::string code = read_text_file(dir / (name + ".cpp"));
  return std::regex_replace(code, std::regex("#include \"fixture.h\""), read_text_file(dir / "fixture.h"));
}

std::vector<json> result_lines(const fs::path& run) {
  std::vector<json> v;
  std::ifstream in(run / "results.jsonl");
  for (std::string line; std::getline(in, line);) v.push_back(json::parse(line));
  return v;
}

std::map<std::string, int> status_counts(const std::vector<json>& lines) {
  std::map<std::string, int> m;
  for (const auto& j : lines) ++m[j.value("status", "")];
  return m;
}

json report(const fs::path& run) { return json::parse(read_text_file(run / "report.json")); }

// Problem 1 at a small size on two CPU ranks, quick timing: the run's own settings, not the defaults.
std::vector<std::string> cpu_run_args(const std::string& model, const fs::path& out, int samples) {
  return pkb::test::joined(
      {{
           "run",      "--model",  model, "--problems", "1",       "--samples", std::to_string(samples),
           "--device", "cpu",      "-w",  "2",          "--param", "M=64",      "--param",
           "N=48",     "--trials", "1",   "--warmup",   "1",       "--iters",   "3",
       },
       pkb::test::kShortTiming,
       {"--timeout", "8", "--out", out.string(), "--cache", PKB_TEST_CACHE}});
}

TEST(Run, ReplayedMixLandsInTheRightCountsAndASecondRunRedoesNothing) {
  TempDir tmp;
  fs::path replay = tmp.path() / "replay", run = tmp.path() / "run";
  write_file(replay / "001_allreduce/sample_0.cu", cpu_fixture("correct"));
  write_file(replay / "001_allreduce/sample_1.cu", cpu_fixture("wrong_value"));
  write_file(replay / "001_allreduce/sample_2.cu", cpu_fixture("spin_forever"));
  CliRun r = pkb_cli(cpu_run_args("replay:" + replay.string(), run, 3));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto lines = result_lines(run);
  ASSERT_EQ(lines.size(), 3u) << r.err;
  auto counts = status_counts(lines);
  EXPECT_EQ(counts["correct"], 1);
  EXPECT_EQ(counts["incorrect"], 1);
  EXPECT_EQ(counts["timeout"], 1);
  json p = report(run)["problems"][0];
  EXPECT_EQ(p["n"], 3);
  EXPECT_EQ(p["c"], 1);
  EXPECT_NEAR(p["pass_at_k"][0]["value"].get<double>(), 1.0 / 3, 1e-9);
  EXPECT_TRUE(fs::exists(run / "summary.md"));
  EXPECT_TRUE(fs::exists(run / "report.html"));
  EXPECT_NE(r.err.find("[3/3] 001_allreduce"), std::string::npos) << r.err;  // the progress display
  // One reference entry serves the three samples; this process hashes it whole once, not for every sample.
  int verified_earlier = 0;
  for (const json& line : lines) verified_earlier += line["reference"].value("verified_earlier", false);
  EXPECT_GE(verified_earlier, 1);
  EXPECT_NE(r.err.find("pass 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ETA"), std::string::npos) << r.err;
  json manifest = json::parse(read_text_file(run / "manifest.json"));
  EXPECT_EQ(manifest["model"], "replay:" + replay.string());
  EXPECT_EQ(manifest["settings"]["world"], 2);

  CliRun again = pkb_cli(cpu_run_args("replay:" + replay.string(), run, 3));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("resuming: 3 of 3 samples already recorded"), std::string::npos) << again.err;
  EXPECT_EQ(result_lines(run).size(), 3u);
  EXPECT_EQ(json::parse(read_text_file(run / "manifest.json"))["invocations"], 2);
}

TEST(Run, AnswersWithoutCodeAreFailedSamples) {
  testing::LoopbackServer server;
  std::string good = "Here:\n```cuda\n" + cpu_fixture("correct") + "\n```\n";
  server.push(testing::json_response(200, testing::chat_body(good)));
  server.push(testing::json_response(200, testing::chat_body("I would rather explain the algorithm in prose.")));
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  auto args = cpu_run_args("compat:" + server.url() + "/v1@tiny", run, 2);
  args.insert(args.end(), {"--concurrency", "1"});
  CliRun r = pkb_cli(args, {{"PKB_COMPAT_API_KEY", "test-key"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto counts = status_counts(result_lines(run));
  EXPECT_EQ(counts["correct"], 1) << r.err;
  EXPECT_EQ(counts["generation_failed"], 1) << r.err;
  json p = report(run)["problems"][0];
  EXPECT_EQ(p["n"], 2);  // the answer without code is a sample, and a failed one
  EXPECT_EQ(p["c"], 1);
  EXPECT_EQ(server.request_count(), 2);
  // Resuming sends no request (the replies are cached) and appends nothing.
  CliRun again = pkb_cli(args, {{"PKB_COMPAT_API_KEY", "test-key"}});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_EQ(result_lines(run).size(), 2u);
}

// Greedy decoding returns the same kernel for every sample: each is still a sample, and the progress line, the
// records and the report agree on n and c.
TEST(Run, IdenticalKernelsInTwoSamplesAreTwoSamples) {
  TempDir tmp;
  fs::path replay = tmp.path() / "replay", run = tmp.path() / "run";
  write_file(replay / "001_allreduce/sample_0.cu", cpu_fixture("correct"));
  write_file(replay / "001_allreduce/sample_1.cu", cpu_fixture("correct"));
  write_file(replay / "001_allreduce/sample_2.cu", cpu_fixture("wrong_value"));
  CliRun r = pkb_cli(cpu_run_args("replay:" + replay.string(), run, 3));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto lines = result_lines(run);
  ASSERT_EQ(lines.size(), 3u) << r.err;
  for (int k = 0; k < 3; ++k) EXPECT_EQ(lines[k]["sample"], k) << lines[k].dump();  // in run order: one slot
  EXPECT_EQ(lines[0]["model"], "replay:" + replay.string());
  json p = report(run)["problems"][0];
  EXPECT_EQ(p["n"], 3);
  EXPECT_EQ(p["c"], 2);
  EXPECT_NEAR(p["pass_at_k"][0]["value"].get<double>(), 2.0 / 3, 1e-9);
  EXPECT_EQ(p["failures"], json({{"incorrect", 1}}));
  EXPECT_NE(r.err.find("[3/3] 001_allreduce sample 2: incorrect"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("| pass 2, fast"), std::string::npos) << r.err;  // the progress line agrees with the report
  CliRun again = pkb_cli(cpu_run_args("replay:" + replay.string(), run, 3));
  EXPECT_NE(again.err.find("resuming: 3 of 3 samples already recorded"), std::string::npos) << again.err;
  EXPECT_EQ(result_lines(run).size(), 3u);
}

// The service failing is not the model failing: with every request answered 401 nothing is recorded, the run
// says it is incomplete with the provider's message and exits 1, the batch stops at the first 401, and a later
// invocation (the key fixed) asks again and completes.
TEST(Run, AServiceFailureIsNoSampleAndLeavesTheRunIncomplete) {
  testing::LoopbackServer server;
  server.set_fallback(testing::json_response(
      401,
      R"({"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}})"));
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  auto args = cpu_run_args("compat:" + server.url() + "/v1@tiny", run, 3);
  args.insert(args.end(), {"--concurrency", "1", "--max-attempts", "2", "--retry-base-ms", "1"});
  CliRun r = pkb_cli(args, {{"PKB_COMPAT_API_KEY", "test-key"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(server.request_count(), 1);  // 401 is not retried and stops the batch
  EXPECT_NE(r.err.find("pkb run: incomplete: 3 samples without a verdict"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("HTTP 401"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Incorrect API key provided"), std::string::npos) << r.err;
  EXPECT_EQ(result_lines(run).size(), 0u);
  EXPECT_EQ(report(run)["missing"], json::array({"001_allreduce"}));  // named, not vanished
  // The report says the API failed and scores nothing: no "pass@1 0.0 over 0 samples".
  std::string why = report(run)["no_samples"].get<std::string>();
  EXPECT_EQ(why.rfind("no samples: the model API failed: auth: HTTP 401", 0), 0u) << why;
  EXPECT_NE(why.find("Incorrect API key provided"), std::string::npos) << why;
  EXPECT_TRUE(report(run)["aggregate"].is_null());
  EXPECT_EQ(report(run)["curves"], json::array());
  EXPECT_TRUE(report(run)["problems"][0]["pass_at_k"][0]["value"].is_null());
  for (const char* file : {"summary.md", "report.html"}) {
    std::string text = read_text_file(run / file);
    EXPECT_NE(text.find("no samples: the model API failed: auth: HTTP 401"), std::string::npos) << file << text;
    EXPECT_EQ(text.find("pass@1"), std::string::npos) << file << text;
  }

  server.set_fallback(
      testing::json_response(200, testing::chat_body("```cuda\n" + cpu_fixture("correct") + "\n```\n")));
  CliRun fixed = pkb_cli(args, {{"PKB_COMPAT_API_KEY", "test-key"}});
  ASSERT_EQ(fixed.exit_code, 0) << fixed.out << fixed.err;
  EXPECT_EQ(server.request_count(), 4);
  EXPECT_EQ(report(run)["problems"][0]["c"], 3);
  EXPECT_TRUE(report(run)["no_samples"].is_null());
  EXPECT_FALSE(json::parse(read_text_file(run / "manifest.json")).contains("model_api_failure"));
}

// One problem's requests answered HTTP 400 (its prompt is too long for the model, say) is that problem's failure,
// not the run's: its samples are recorded bad_request (failed samples) and the other problems are still asked
// and evaluated; the run is complete and exits 0. A rerun asks the rejected requests again (rejections are not
// cached) and, rejected again, appends nothing.
TEST(Run, A400ForOneProblemIsABadRequestSampleAndTheRunGoesOn) {
  testing::LoopbackServer server;
  const std::string good = "```cuda\n" + cpu_fixture("correct") + "\n```\n";
  server.set_responder([&](const testing::RecordedRequest& req) {
    if (req.body.find("002_allgather") != std::string::npos)
      return testing::json_response(
          400, R"({"error":{"message":"maximum context length is 8192 tokens","type":"invalid_request_error"}})");
    if (req.body.find("003_broadcast") != std::string::npos)
      return testing::json_response(200, testing::chat_body("I would rather explain it in prose."));
    return testing::json_response(200, testing::chat_body(good));
  });
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  auto args = cpu_run_args("compat:" + server.url() + "/v1@tiny", run, 2);
  *std::find(args.begin(), args.end(), "1") = "1-3";  // --problems
  args.insert(args.end(), {"--concurrency", "1"});
  CliRun r = pkb_cli(args, {{"PKB_COMPAT_API_KEY", "test-key"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(server.request_count(), 6);  // problem 3 was asked after problem 2's 400s
  auto lines = result_lines(run);
  auto counts = status_counts(lines);
  EXPECT_EQ(counts["correct"], 2) << r.err;
  EXPECT_EQ(counts["bad_request"], 2) << r.err;
  EXPECT_EQ(counts["generation_failed"], 2) << r.err;
  for (const auto& j : lines)
    if (j["status"] == "bad_request") {
      EXPECT_EQ(j["problem"]["folder"], "002_allgather");
      EXPECT_NE(j["generation"]["message"].get<std::string>().find("maximum context length"), std::string::npos);
    }
  json rep = report(run);
  ASSERT_EQ(rep["problems"].size(), 3u);
  EXPECT_EQ(rep["problems"][1]["n"], 2);  // failed samples
  EXPECT_EQ(rep["problems"][1]["failures"], json({{"bad_request", 2}}));
  EXPECT_EQ(rep["problems"][0]["c"], 2);
  EXPECT_TRUE(rep["no_samples"].is_null());
  EXPECT_NE(r.out.find("2 rejected by the model service"), std::string::npos) << r.out;

  CliRun again = pkb_cli(args, {{"PKB_COMPAT_API_KEY", "test-key"}});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(server.request_count(), 8);
  EXPECT_EQ(result_lines(run).size(), 6u);
}

// pkb run takes the service options pkb generate has: streamed by default, a stalled stream retried after
// --idle-timeout (the buffered --http-timeout would have cut the paced answer), --no-stream buffers.
TEST(Run, StreamedGenerationAndTheServiceOptions) {
  testing::LoopbackServer server;
  std::string answer = "```cuda\n" + cpu_fixture("correct") + "\n```\n";
  testing::ScriptedResponse stalled = testing::sse_response({testing::chat_stream_events(answer)[0]});
  stalled.hang_s = 10;
  server.push(stalled);
  server.push(testing::sse_response(testing::chat_stream_events(answer), 0.05));
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  auto args = cpu_run_args("compat:" + server.url() + "/v1@tiny", run, 1);
  args.insert(args.end(), {"--idle-timeout", "0.3", "--stream-timeout", "30", "--http-timeout", "0.1", "--max-attempts",
                           "2", "--retry-base-ms", "1"});
  CliRun r = pkb_cli(args, {{"PKB_COMPAT_API_KEY", "test-key"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(server.request_count(), 2);
  EXPECT_EQ(json::parse(server.last_request().body)["stream"], true);
  json gen = json::parse(read_text_file(run / "generations.jsonl"));
  EXPECT_EQ(gen["streamed"], true);
  EXPECT_EQ(gen["broken_streams"], 1);
  EXPECT_EQ(report(run)["problems"][0]["c"], 1);

  testing::LoopbackServer plain;
  plain.set_fallback(testing::json_response(200, testing::chat_body("No code today.")));
  fs::path run2 = tmp.path() / "run2";
  auto buffered = cpu_run_args("compat:" + plain.url() + "/v1@tiny", run2, 1);
  buffered.insert(buffered.end(), {"--no-stream", "--http-timeout", "5"});
  CliRun r2 = pkb_cli(buffered, {{"PKB_COMPAT_API_KEY", "test-key"}});
  ASSERT_EQ(r2.exit_code, 0) << r2.out << r2.err;
  EXPECT_FALSE(json::parse(plain.last_request().body).contains("stream"));
  EXPECT_EQ(json::parse(read_text_file(run2 / "generations.jsonl"))["streamed"], false);
}

// A provider cut-off other than length is a failed sample of its own kind; retry warnings go to stderr, not into
// the results on stdout; a rerun served from the cache spends nothing new.
TEST(Run, RefusedAnswersRetryWarningsAndCachedSpend) {
  testing::LoopbackServer server;
  server.push(testing::json_response(500, R"({"error":{"message":"try again"}})"));
  server.push(testing::json_response(200, testing::chat_body("```cuda\n__global__ void k(", "content_filter")));
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  auto args = cpu_run_args("compat:" + server.url() + "/v1@tiny", run, 1);
  args.insert(args.end(), {"--retry-base-ms", "1"});
  CliRun r = pkb_cli(args, {{"PKB_COMPAT_API_KEY", "test-key"}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto lines = result_lines(run);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["generation"]["status"], "refused");
  EXPECT_EQ(report(run)["problems"][0]["failures"], json({{"refused", 1}}));
  EXPECT_EQ(r.out.find("retrying"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("retrying"), std::string::npos) << r.err;
  CliRun again = pkb_cli(args, {{"PKB_COMPAT_API_KEY", "test-key"}});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(server.request_count(), 2);
  json gen = json::parse(read_text_file(run / "generations.jsonl"));
  EXPECT_EQ(gen["from_cache"], true);
  EXPECT_EQ(gen["sent"]["model"], "tiny");
}

// Resuming with another prompt variant (or temperature, token cap, templates) would mix two experiments.
TEST(Run, RefusesToResumeWithAnotherPromptVariant) {
  TempDir tmp;
  fs::path replay = tmp.path() / "replay", run = tmp.path() / "run";
  write_file(replay / "001_allreduce.cu", cpu_fixture("correct"));
  ASSERT_EQ(pkb_cli(cpu_run_args("replay:" + replay.string(), run, 1)).exit_code, 0);
  auto args = cpu_run_args("replay:" + replay.string(), run, 1);
  args.insert(args.end(), {"--variant", "zero-shot"});
  CliRun r = pkb_cli(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("manifest.json was written with variant = \"one-shot\""), std::string::npos) << r.err;
  json settings = json::parse(read_text_file(run / "manifest.json"))["settings"];
  for (const char* key : {"temperature", "max_tokens", "arch", "prompts_sha256"})
    EXPECT_TRUE(settings.contains(key)) << key;
  EXPECT_EQ(settings["arch"], "sm_90a");  // from the chosen topology's GPU
}

// A timing method no evaluation of the run can score is a usage error before anything runs, not a harness_error in
// every sample: CPU ranks make no device view.
TEST(Run, RefusesTheDeviceTimingMethodOnCpuRanksBeforeAnySample) {
  TempDir tmp;
  fs::path replay = tmp.path() / "replay", run = tmp.path() / "run";
  write_file(replay / "001_allreduce.cu", cpu_fixture("correct"));
  auto args = cpu_run_args("replay:" + replay.string(), run, 1);
  args.insert(args.end(), {"--timing-method", "device"});
  CliRun r = pkb_cli(args);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.err.find("CPU ranks make no device view"), std::string::npos) << r.err;
  EXPECT_TRUE(result_lines(run).empty());
}

TEST(Run, RefusesARunDirectoryMadeWithOtherSettings) {
  TempDir tmp;
  fs::path replay = tmp.path() / "replay", run = tmp.path() / "run";
  write_file(replay / "001_allreduce.cu", cpu_fixture("correct"));
  ASSERT_EQ(pkb_cli(cpu_run_args("replay:" + replay.string(), run, 1)).exit_code, 0);
  auto args = cpu_run_args("replay:" + replay.string(), run, 1);
  args.insert(args.end(), {"--dtype", "fp32"});
  CliRun r = pkb_cli(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("manifest.json was written with dtype = \"bf16\""), std::string::npos) << r.err;
  EXPECT_EQ(result_lines(run).size(), 1u);
  // The baselines' re-timing policy decides what the speedups are measured against: another one is another run.
  args = cpu_run_args("replay:" + replay.string(), run, 1);
  args.insert(args.end(), {"--retime-baseline", "always"});
  r = pkb_cli(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("manifest.json was written with retime_baseline = \"auto\""), std::string::npos) << r.err;
  // A manifest from before the policy was recorded meant the default, and resumes with it.
  json manifest = json::parse(read_text_file(run / "manifest.json"));
  manifest["settings"].erase("retime_baseline");
  write_file(run / "manifest.json", manifest.dump());
  r = pkb_cli(cpu_run_args("replay:" + replay.string(), run, 1));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(read_text_file(run / "manifest.json"))["settings"]["retime_baseline"], "auto");
  EXPECT_EQ(result_lines(run).size(), 1u);
  // Likewise a manifest from before the baselines' device view (its timing has no device_iters) resumes with the
  // default; another --device-iters is another run.
  manifest = json::parse(read_text_file(run / "manifest.json"));
  manifest["settings"]["timing"].erase("device_iters");
  write_file(run / "manifest.json", manifest.dump());
  r = pkb_cli(cpu_run_args("replay:" + replay.string(), run, 1));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  args = cpu_run_args("replay:" + replay.string(), run, 1);
  args.insert(args.end(), {"--device-iters", "7"});
  r = pkb_cli(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("manifest.json was written with timing = "), std::string::npos) << r.err;
}

// pkb's own failure (the reference pass cannot be cached: the cache's reference/ is a file) is recorded for every
// sample, harness_error with the reason: no sample is lost and none is scored. The run is incomplete (exit 1), and the
// same command, with the cache repaired, evaluates those samples again rather than counting them done.
TEST(Run, AHarnessErrorIsRecordedAndTheNextInvocationEvaluatesItAgain) {
  TempDir tmp;
  fs::path replay = tmp.path() / "replay", run = tmp.path() / "run", cache = tmp.path() / "cache";
  write_file(replay / "001_allreduce/sample_0.cu", cpu_fixture("correct"));
  write_file(replay / "001_allreduce/sample_1.cu", cpu_fixture("wrong_value"));
  write_file(cache / "reference", "not a directory\n");
  auto args = cpu_run_args("replay:" + replay.string(), run, 2);
  args.back() = cache.string();  // --cache
  CliRun broken = pkb_cli(args);
  EXPECT_EQ(broken.exit_code, 1) << broken.out << broken.err;
  auto lines = result_lines(run);
  ASSERT_EQ(lines.size(), 2u) << broken.err;
  for (const json& line : lines) {
    EXPECT_EQ(line["status"], "harness_error") << line.dump(2);
    EXPECT_NE(line.value("message", "").find("harness error, no verdict"), std::string::npos) << line.dump(2);
  }
  EXPECT_NE(broken.out.find("2 recorded harness_error"), std::string::npos) << broken.out;
  json rep = report(run);
  EXPECT_EQ(rep["aggregate"]["harness_errors"], 2);
  EXPECT_EQ(rep["problems"][0]["n"], 0);  // no sample scored
  EXPECT_NE(read_text_file(run / "summary.md").find("harness error"), std::string::npos);

  fs::remove(cache / "reference");
  CliRun fixed = pkb_cli(args);
  ASSERT_EQ(fixed.exit_code, 0) << fixed.out << fixed.err;
  EXPECT_EQ(fixed.err.find("resuming"), std::string::npos) << fixed.err;  // nothing was counted done
  lines = result_lines(run);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2]["status"], "correct") << lines[2].dump(2);
  EXPECT_EQ(lines[3]["status"], "incorrect") << lines[3].dump(2);
  rep = report(run);
  EXPECT_EQ(rep["problems"][0]["n"], 2);
  EXPECT_EQ(rep["problems"][0]["c"], 1);
  EXPECT_EQ(rep["aggregate"]["harness_errors"], 0);
}

TEST(Run, WithoutAGpuCompilesValidatesAndReportsTheEvaluationsSkipped) {
  TempDir tmp;
  fs::path run = tmp.path() / "run";
  // CUDA_VISIBLE_DEVICES="" hides any GPU, so this holds on GPU machines too.
  CliRun r = pkb_cli({"run", "--problems", "1", "--out", run.string(), "--cache", PKB_TEST_CACHE},
                     {{"CUDA_VISIBLE_DEVICES", ""}});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no GPU on this machine: GPU evaluations were skipped"), std::string::npos) << r.out;
  auto lines = result_lines(run);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["status"], "not_evaluated") << lines[0].dump(2);  // the expert kernel compiled with nvcc
  EXPECT_EQ(lines[0]["compile"]["status"], "ok");
  json rep = report(run);
  EXPECT_EQ(rep["aggregate"]["not_evaluated"], 1);
  EXPECT_NE(read_text_file(run / "summary.md").find("skipped"), std::string::npos);
  json refs = json::parse(read_text_file(run / "references_cpu.json"));
  EXPECT_EQ(refs["001_allreduce"]["verdict"], "PASS");
}

}  // namespace
}  // namespace pkb

namespace pkb {
namespace {

// A baseline report.json as `pkb report` writes it, reduced to what regress reads.
void write_baseline(const fs::path& path, double best_speedup) {
  json base = {{"schema", "pkb.report/1"},
               {"problems",
                {{{"folder", "001_allreduce"}, {"c", 1}, {"best_speedup", best_speedup}},
                 {{"folder", "002_allgather"}, {"c", 1}, {"best_speedup", 2.0}}}}};
  write_file(path, base.dump(2));
}

CliRun regress(const fs::path& baseline, const fs::path& candidates, const fs::path& out) {
  auto args = cpu_run_args("unused", out, 1);
  args.erase(args.begin(), args.begin() + 7);  // drop run --model M --problems 1 --samples K
  args.insert(args.begin(),
              {"regress", "--baseline", baseline.string(), "--candidates", candidates.string(), "--slowdown", "10%"});
  return pkb_cli(args);
}

TEST(Regress, PassesAKeptKernelAndFailsAWrongOrSlowerOneInJUnit) {
  TempDir tmp;
  write_file(tmp.path() / "ok/001_allreduce.cu", cpu_fixture("correct"));
  write_file(tmp.path() / "wrong/001_allreduce.cu", cpu_fixture("wrong_value"));
  write_file(tmp.path() / "slow/001_allreduce.cu", cpu_fixture("correct_but_slow"));
  write_baseline(tmp.path() / "lenient.json", 1e-9);

  CliRun ok = regress(tmp.path() / "lenient.json", tmp.path() / "ok", tmp.path() / "run_ok");
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  std::string junit = read_text_file(tmp.path() / "run_ok/junit.xml");
  EXPECT_NE(junit.find("tests=\"2\" failures=\"0\" errors=\"0\" skipped=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("name=\"002_allgather\" time=\"0.000\"><skipped message=\"no candidate submitted\"/>"),
            std::string::npos)
      << junit;
  auto lines = result_lines(tmp.path() / "run_ok");
  ASSERT_EQ(lines.size(), 1u);
  double speedup = lines[0]["timing"]["speedup"].get<double>();

  CliRun wrong = regress(tmp.path() / "lenient.json", tmp.path() / "wrong", tmp.path() / "run_wrong");
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out << wrong.err;
  junit = read_text_file(tmp.path() / "run_wrong/junit.xml");
  EXPECT_NE(junit.find("failures=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("type=\"regression\">was correct in the baseline, now incorrect"), std::string::npos) << junit;

  // Baseline: the correct kernel's own speedup. The 20 ms nap costs far more than the 10% allowed.
  write_baseline(tmp.path() / "measured.json", speedup);
  CliRun slow = regress(tmp.path() / "measured.json", tmp.path() / "slow", tmp.path() / "run_slow");
  EXPECT_EQ(slow.exit_code, 1) << slow.out << slow.err;
  EXPECT_NE(slow.out.find("slower: "), std::string::npos) << slow.out;
  EXPECT_NE(read_text_file(tmp.path() / "run_slow/junit.xml").find("type=\"regression\">slower"), std::string::npos);
}

TEST(Regress, RejectsABaselineThatIsNotAReport) {
  TempDir tmp;
  write_file(tmp.path() / "bogus.json", "{\"schema\": \"something else\"}");
  write_file(tmp.path() / "c/001_allreduce.cu", cpu_fixture("correct"));
  CliRun r = regress(tmp.path() / "bogus.json", tmp.path() / "c", tmp.path() / "run");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not a pkb.report/1 report.json"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace pkb
