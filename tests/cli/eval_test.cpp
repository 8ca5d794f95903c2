// `pkb eval` on every CPU-mode fixture candidate (tests/fixtures/cpu): each must land in its status, and pkb
// must come back promptly from crashes and hangs.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "../unit/test_util.h"
#include "core/files.h"
#include "core/sha256.h"
#include "launch/jobs.h"
#include "launch/process.h"
#include "spec/catalog.h"

namespace {

struct Case {
  const char* fixture;
  const char* status;
  const char* message;  // a fragment the verdict must contain
};

nlohmann::json eval_fixture(const std::string& fixture, double timeout_s,
                            std::vector<std::string> problem_args = {"--problem", "1", "--param", "M=64", "--param",
                                                                     "N=48"},
                            const std::filesystem::path& out_dir = {},
                            const std::filesystem::path& cache_dir = PKB_TEST_CACHE) {
  pkb::test::TempDir tmp;
  const std::filesystem::path eval_out = out_dir.empty() ? tmp.path() / "eval" : out_dir;
  pkb::ProcessOptions o;
  o.timeout_s = 120;
  o.stdout_path = tmp.path() / "out";
  o.stderr_path = tmp.path() / "err";
  auto src = pkb::repo_root() / "tests/fixtures/cpu" / (fixture + ".cpp");
  std::vector<std::string> argv = {PKB_BINARY, "eval", src.string()};
  argv.insert(argv.end(), problem_args.begin(), problem_args.end());
  // The shortest timing (kShortTiming): these tests judge statuses, not speed (a default paper warm-up and five
  // repetitions are ~3 s of each evaluation's wall here).
  argv.insert(argv.end(), {"-w", "2", "--device", "cpu", "--trials", "2", "--warmup", "1", "--iters", "5"});
  argv.insert(argv.end(), pkb::test::kShortTiming.begin(), pkb::test::kShortTiming.end());
  argv.insert(argv.end(), {"--timeout", std::to_string(timeout_s), "--out", eval_out.string(), "--cache",
                           cache_dir.string(), "--json"});
  auto r = pkb::run_process(argv, o);
  EXPECT_TRUE(r.exited) << r.summary();
  EXPECT_LT(r.wall_s, 90) << "pkb must return promptly";
  std::string out = pkb::file_tail(tmp.path() / "out", 1 << 24);
  auto j = nlohmann::json::parse(out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << out << pkb::file_tail(tmp.path() / "err");
  // The record was appended to results.jsonl too.
  std::string jsonl = pkb::file_tail(eval_out / "results.jsonl", 1 << 24);
  EXPECT_NE(jsonl.find("\"schema\":\"pkb.result/1\""), std::string::npos);
  const std::string status = j.value("status", "");
  EXPECT_EQ(r.exit_code, status == "correct" ? 0 : status == "harness_error" ? 2 : 1);  // 2: pkb itself failed
  return j;
}

class Fixture : public testing::TestWithParam<Case> {};

TEST_P(Fixture, LandsInItsStatus) {
  const Case& c = GetParam();
  std::string f = c.fixture;
  bool hangs = f == "spin_forever" || f == "barrier_deadlock";
  auto j = eval_fixture(f, hangs ? 6 : 60);
  EXPECT_EQ(j.value("status", ""), c.status) << j.dump(2).substr(0, 3000);
  EXPECT_NE(j.value("message", "").find(c.message), std::string::npos) << j.value("message", "");
}

INSTANTIATE_TEST_SUITE_P(CpuFixtures, Fixture,
                         testing::Values(Case{"correct", "correct", "correct"},
                                         Case{"wrong_value", "incorrect", "1 of 3072 mismatched"},
                                         Case{"partial_write", "incorrect", "1536 NaN"},
                                         Case{"nan_output", "incorrect", "1 NaN"},
                                         Case{"mutate_input", "incorrect", "modified input 'tensor'"},
                                         Case{"segfault", "crash", "rank 1 killed by signal 11"},
                                         Case{"spin_forever", "timeout", "hang or deadlock"},
                                         Case{"barrier_deadlock", "timeout", "hang or deadlock"},
                                         Case{"missing_run", "load_error", "does not export pkb_run"},
                                         Case{"compile_error", "compile_error", "error"},
                                         Case{"error_code", "runtime_error", "pkb_run returned 7"},
                                         Case{"first_call_only", "incorrect", "trial 1"},
                                         Case{"spawns_process", "lint_violation", "[process]"},
                                         Case{"symm_alloc_mismatch", "runtime_error", "needs equal sizes"}),
                         [](const testing::TestParamInfo<Case>& i) { return std::string(i.param.fixture); });

// --draw-copies on (for GPUs once measured there): the monitor draws each timing call's copy into its slot before the
// call (the runtime's generator, the host's bytes on any device) and makes none on the host. A correct kernel stays
// correct, each timed call meets contents of its own, and wrong or input-writing kernels are still caught.
TEST(Eval, DrawnCopiesAreNeverMadeOnTheHost) {
  const std::vector<std::string> drawn = {"--problem", "1",    "--param",       "M=64",
                                          "--param",   "N=48", "--draw-copies", "on"};
  auto j = eval_fixture("correct", 60, drawn);
  ASSERT_EQ(j.value("status", ""), "correct") << j.dump(2).substr(0, 3000);
  const auto& c = j["timing"]["candidate"];
  const int reps = c["reps"].get<int>();
  EXPECT_GT(c.value("copies_drawn_in_place", 0), 8 * reps);  // the warm-ups' and every timed call's
  EXPECT_EQ(c["input_copies_made"].get<int>(), 0);
  EXPECT_EQ(c["distinct_input_contents"].get<int>(), 8 * reps);  // 8 timed calls a repetition, none on a revisit
  EXPECT_GE(j["checks"]["timed_calls_checked"].get<int>(), 1);
  EXPECT_EQ(eval_fixture("wrong_value", 60, drawn).value("status", ""), "incorrect");
  EXPECT_EQ(eval_fixture("mutate_input", 60, drawn).value("status", ""), "incorrect");
  // Off: every copy a repetition used was made on the host.
  auto made =
      eval_fixture("correct", 60, {"--problem", "1", "--param", "M=64", "--param", "N=48", "--draw-copies", "off"});
  EXPECT_FALSE(made["timing"]["candidate"].contains("copies_drawn_in_place"));
  const auto& m = made["timing"]["candidate"];
  EXPECT_EQ(m["input_copies_made"].get<int>(), m["input_copies"].get<int>() - (2 - m["reps"].get<int>()) * 8);
}

TEST(Eval, CorrectCandidateReportsTimesAndSpeedup) {
  auto j = eval_fixture("correct", 60);
  ASSERT_EQ(j.value("status", ""), "correct");
  const auto& t = j["timing"];
  EXPECT_GT(t["candidate"]["median_us"].get<double>(), 0);
  // Both methods, in repetitions of 5 pkb calls and a paper block each; the pkb method drives `speedup`.
  int reps = t["candidate"]["reps"].get<int>();
  EXPECT_GE(reps, 1);
  EXPECT_EQ(t["candidate"]["iters"].get<int>(), 5 * reps);
  EXPECT_EQ(t["candidate"]["paper"]["reps"].get<int>(), reps);
  // Input copies are made for the repetitions that run, not for the plan's largest: one per timed call here (tiny
  // inputs), so a timing that stopped before --max-reps 2 made 8 (5 + 3 calls) fewer.
  EXPECT_EQ(t["candidate"]["input_copies_made"].get<int>(), t["candidate"]["input_copies"].get<int>() - (2 - reps) * 8);
  // CPU ranks: the monitor captures and sends only the copies the driver checks (a draw may name a copy twice), where
  // every copy a timed call used would be 8 a repetition here.
  EXPECT_GE(t["candidate"]["captures_sent"].get<int>(), 1);
  EXPECT_LE(t["candidate"]["captures_sent"].get<int>(), j["checks"]["timed_calls_checked"].get<int>());
  EXPECT_GT(t["candidate"]["paper"]["median_us"].get<double>(), 0);
  EXPECT_GT(t["baseline_libtorch_nccl"]["paper"]["median_us"].get<double>(), 0);
  EXPECT_EQ(t["method"], "pkb");
  EXPECT_EQ(j["timing_settings"]["method"], "pkb");
  EXPECT_NEAR(t["by_method"]["paper"]["speedup"].get<double>(),
              t["baseline_libtorch_nccl"]["paper"]["median_us"].get<double>() /
                  t["candidate"]["paper"]["median_us"].get<double>(),
              1e-9);
  EXPECT_EQ(t["candidate"]["clocks"]["available"], false);  // CPU ranks
  // CPU ranks: the candidate's windows and the baseline's each hold one doorbell (the runner woken and stopped).
  EXPECT_GT(t["candidate"].value("doorbell_us", 0.0), 0);
  EXPECT_GT(t["baseline_libtorch_nccl"].value("doorbell_us", 0.0), 0);
  EXPECT_EQ(t["instruments"], nlohmann::json({{"candidate", "doorbell"}, {"baseline_libtorch_nccl", "doorbell"}}));
  EXPECT_FALSE(t["throttled"].get<bool>());
  // The host probes, before every repetition, and the candidate's host speed against the baseline's.
  EXPECT_EQ(t["candidate"]["host_chase_probe_us"].size(), static_cast<size_t>(reps));
  EXPECT_GT(t["host_speed_ratio"].get<double>(), 0);
  EXPECT_TRUE(t["host_drift"].is_boolean());
  EXPECT_GT(t["baseline_libtorch_nccl"]["median_us"].get<double>(), 0);
  EXPECT_EQ(t["baseline"], "libtorch_nccl");
  EXPECT_NEAR(t["speedup"].get<double>(),
              t["baseline_libtorch_nccl"]["median_us"].get<double>() / t["candidate"]["median_us"].get<double>(), 1e-9);
  EXPECT_TRUE(j["checks"]["robust_pass"].get<bool>());
  EXPECT_TRUE(j["checks"]["pkb_pass"].get<bool>());
  // Trials 0, 1 and the post-timing trial 2, on both ranks, then the checked timed calls.
  int trial_checks = 0, timed_checks = 0;
  for (const auto& c : j["checks"]["comparisons"]) (c.contains("trial") ? trial_checks : timed_checks)++;
  EXPECT_EQ(trial_checks, 6);
  EXPECT_GE(j["checks"]["timed_calls_checked"].get<int>(), 1);
  EXPECT_EQ(timed_checks, 2 * j["checks"]["timed_calls_checked"].get<int>());
  EXPECT_TRUE(j["sandbox"]["enabled"].get<bool>());
  EXPECT_EQ(j["sandbox"]["rank_program"], "pkb-candidate");  // problem 1 has no prepare step: no libtorch
  for (const char* k : {"pkb_git", "libtorch"}) EXPECT_TRUE(j["provenance"].contains(k)) << k;
  // The reference pass's fp32 math, as its ranks read it back: IEEE fp32, never TF32.
  EXPECT_EQ(
      j["provenance"]["fp32_math"],
      (nlohmann::json{
          {"ieee", true}, {"tf32_cudnn", false}, {"tf32_cublas", false}, {"float32_matmul_precision", "highest"}}));
  for (const char* k : {"compile_s", "reference_s", "candidate_s", "total_s"}) EXPECT_TRUE(j["wall"].contains(k)) << k;
}

// The candidate's --timeout is no deadline for pkb's own reference pass: with 1 s, and timing repetitions a second
// apart (--rep-gap-ms: the uncached reference pass takes ~3.5 s), the reference pass completes under its own
// deadline and the candidate, cut at its 1 s, is recorded `timeout`. (Before, the reference pass was killed at the
// candidate's deadline and pkb exited with an error and no record; --reference-timeout 1 shows that still.)
TEST(Eval, TheCandidatesTimeoutDoesNotCutTheReferencePass) {
  pkb::test::TempDir tmp;
  auto eval = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"eval",
                                     (pkb::repo_root() / "tests/fixtures/cpu/correct.cpp").string(),
                                     "--problem",
                                     "1",
                                     "--param",
                                     "M=64",
                                     "--param",
                                     "N=48",
                                     "-w",
                                     "2",
                                     "--device",
                                     "cpu",
                                     "--trials",
                                     "1",
                                     "--warmup",
                                     "1",
                                     "--iters",
                                     "5",
                                     "--paper-warmup",
                                     "1",
                                     "--paper-iters",
                                     "3",
                                     "--min-reps",
                                     "3",
                                     "--max-reps",
                                     "3",
                                     "--rep-gap-ms",
                                     "1000",
                                     "--timeout",
                                     "1",
                                     "--out",
                                     (tmp.path() / "out").string(),
                                     "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    pkb::test::CliRun r = pkb::test::run_cli(PKB_BINARY, args);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    return std::make_pair(r.exit_code, j);
  };
  auto [code, j] = eval({"--cache", (tmp.path() / "cache").string()});  // a fresh cache: the reference pass runs
  EXPECT_EQ(code, 1);
  EXPECT_EQ(j.value("status", ""), "timeout") << j.dump(2).substr(0, 3000);
  EXPECT_EQ(j["reference"]["cached"], false);
  EXPECT_EQ(j["reference"]["timeout_s"], 900);  // kReferenceTimeoutS
  EXPECT_GT(j["wall"]["reference_s"].get<double>(), 2);
  EXPECT_TRUE(std::filesystem::exists(j["reference"]["cache_dir"].get<std::string>() + "/complete.json"));

  // Its own deadline, set short, is the reference pass's: a harness error, recorded.
  auto [short_code, cut] = eval({"--cache", (tmp.path() / "other-cache").string(), "--reference-timeout", "1"});
  EXPECT_EQ(short_code, 2);
  EXPECT_EQ(cut.value("status", ""), "harness_error") << cut.dump(2).substr(0, 3000);
  EXPECT_NE(cut.value("message", "").find("timed out"), std::string::npos) << cut.value("message", "");
}

// A reference pass that fails is pkb's failure, not the candidate's: still a record (harness_error, exit code 2),
// with the reason, and no verdict. Here the cache cannot hold reference entries (its reference/ is a file).
TEST(Eval, AFailedReferencePassIsAHarnessErrorRecord) {
  pkb::test::TempDir cache, out;
  pkb::test::write_file(cache.path() / "reference", "not a directory\n");
  auto j =
      eval_fixture("correct", 60, {"--problem", "1", "--param", "M=64", "--param", "N=48"}, out.path(), cache.path());
  EXPECT_EQ(j.value("status", ""), "harness_error") << j.dump(2).substr(0, 3000);
  EXPECT_NE(j.value("message", "").find("harness error, no verdict"), std::string::npos) << j.value("message", "");
  EXPECT_TRUE(j["failure"].contains("harness")) << j.dump(2).substr(0, 3000);
  EXPECT_FALSE(j.contains("checks"));
  EXPECT_FALSE(j.contains("timing"));
}

// A reference record that does not parse (here rank 0's timed_checks a string: read with a default, as records once
// were, it was no checks at all, and the candidate was judged without its timed calls) is pkb's own failure: a record
// that says harness_error (exit code 2) with the key, never the candidate's runtime_error nor a verdict. The cache
// entry's digest is rewritten with it, so the entry is believed.
TEST(Eval, AMistypedReferenceRecordIsAHarnessError) {
  pkb::test::TempDir cache, out;
  const std::vector<std::string> problem = {"--problem", "1", "--param", "M=64", "--param", "N=48"};
  auto first = eval_fixture("correct", 60, problem, out.path(), cache.path());
  ASSERT_EQ(first.value("status", ""), "correct") << first.dump(2).substr(0, 3000);
  const std::filesystem::path entry = first["reference"]["cache_dir"].get<std::string>();
  auto record = nlohmann::json::parse(pkb::read_text_file(entry / "rank0.json"));
  ASSERT_TRUE(record["timed_checks"].is_array()) << record.dump(2).substr(0, 2000);
  record["timed_checks"] = "5";
  const std::string text = record.dump(2) + "\n";
  pkb::test::write_file(entry / "rank0.json", text);
  auto complete = nlohmann::json::parse(pkb::read_text_file(entry / "complete.json"));
  complete["files"]["rank0.json"] = pkb::sha256_hex(text);
  pkb::test::write_file(entry / "complete.json", complete.dump());

  auto j = eval_fixture("correct", 60, problem, out.path(), cache.path());
  EXPECT_EQ(j.value("status", ""), "harness_error") << j.dump(2).substr(0, 3000);
  EXPECT_EQ(j["reference"].value("cached", false), true) << "the entry was believed, its record refused";
  EXPECT_NE(j.value("message", "").find("\"timed_checks\""), std::string::npos) << j.value("message", "");
  EXPECT_TRUE(j["failure"].contains("harness")) << j.dump(2).substr(0, 3000);
  EXPECT_FALSE(j.contains("checks"));
}

// A launcher that returns 0 without having run the ranks (srun did, when two test clusters shared a PMIx folder) or
// that fails before any rank could say why: pkb's failure (harness_error, never the candidate's), and the message
// carries what the launcher printed, the only clue.
TEST(Eval, ALauncherThatRanNoRankIsAHarnessErrorWithWhatItPrinted) {
  pkb::test::TempDir tmp;
  // The reference pass's message with a launcher (srun) that prints `said` and exits `code` without running a rank.
  auto message_with_launcher = [&](const std::string& said, int code) {
    const std::filesystem::path fake_srun = tmp.path() / ("srun-" + std::to_string(code));
    pkb::test::write_file(fake_srun, "#!/bin/sh\necho '" + said + "' >&2\nexit " + std::to_string(code) + "\n");
    std::filesystem::permissions(fake_srun, std::filesystem::perms::owner_all);
    const std::string src = (pkb::repo_root() / "tests/fixtures/cpu/correct.cpp").string();
    const std::string cache = (tmp.path() / ("cache-" + std::to_string(code))).string();
    pkb::test::CliRun r = pkb::test::run_cli(
        PKB_BINARY,
        pkb::test::joined({{"eval", src, "--problem", "1", "--param", "M=64", "--param", "N=48", "-w", "2", "--device",
                            "cpu", "--trials", "1", "--cache", cache, "--out", (tmp.path() / "out").string(), "--json"},
                           pkb::test::kShortTiming}),
        {{"PKB_LAUNCHER", "srun"}, {"PKB_SRUN", fake_srun.string()}}, 120);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out << r.err;
    EXPECT_EQ(j.value("status", ""), "harness_error") << j.dump(2).substr(0, 3000);
    EXPECT_EQ(r.exit_code, 2);
    return j.value("message", "");
  };
  const std::string ran_nothing = message_with_launcher("srun: error: task 0 launch failed: Unspecified error", 0);
  EXPECT_NE(ran_nothing.find("rank 0 left no record though the launch ended with exit 0"), std::string::npos)
      << ran_nothing;
  EXPECT_NE(ran_nothing.find("task 0 launch failed"), std::string::npos) << ran_nothing;
  const std::string failed = message_with_launcher("srun: error: Unable to create step for job 7", 1);
  EXPECT_NE(failed.find("reference pass for 001_allreduce failed: exit 1"), std::string::npos) << failed;
  EXPECT_NE(failed.find("Unable to create step"), std::string::npos) << failed;
}

// --retime-baseline always: the baselines are timed again beside the candidate (never cached), and the speedup is
// against that timing; the cached baseline's median stays in the record. never: the cached one, nothing re-timed.
TEST(Eval, RetimedBaselinesReplaceTheCachedOnes) {
  pkb::test::TempDir out;
  auto j =
      eval_fixture("correct", 60,
                   {"--problem", "1", "--param", "M=64", "--param", "N=48", "--retime-baseline", "always"}, out.path());
  ASSERT_EQ(j.value("status", ""), "correct") << j.dump(2).substr(0, 3000);
  const auto& t = j["timing"];
  ASSERT_TRUE(t.contains("baseline_retimed")) << t.dump(2);
  EXPECT_EQ(t["baseline_retimed"]["reason"], "always");
  EXPECT_FALSE(t["baseline_retimed"].contains("error")) << t["baseline_retimed"].dump();
  EXPECT_GT(t["baseline_retimed"]["libtorch_nccl_median_us"].get<double>(), 0);  // the cached timing's
  EXPECT_GT(j["wall"]["retime_s"].get<double>(), 0);
  EXPECT_EQ(j["timing_settings"]["retime_baseline"], "always");
  // The fresh timing is the one the record uses: the re-timing pass's own rank 0 record says so.
  auto fresh = nlohmann::json::parse(
      pkb::read_text_file(std::filesystem::path(j["run_dir"].get<std::string>()) / "retime/rank0.json"));
  EXPECT_EQ(t["baseline_libtorch_nccl"]["median_us"], fresh["timing"]["median_us"]);
  EXPECT_NEAR(t["speedup"].get<double>(),
              fresh["timing"]["median_us"].get<double>() / t["candidate"]["median_us"].get<double>(), 1e-9);

  auto cached = eval_fixture("correct", 60,
                             {"--problem", "1", "--param", "M=64", "--param", "N=48", "--retime-baseline", "never"});
  ASSERT_EQ(cached.value("status", ""), "correct");
  EXPECT_FALSE(cached["timing"].contains("baseline_retimed"));
  EXPECT_FALSE(cached["wall"].contains("retime_s"));
}

// Problem 24's inputs need its libtorch prepare step (a per-rank expert preference added to the draws), so its
// candidates run in pkb-rank; a correct candidate is correct only if it saw the prepared inputs (on the raw draws
// the losses differ by O(1): problem.json's deviations).
TEST(Eval, CandidateOfAProblemWithAPrepareStepRunsInPkbRank) {
  auto j = eval_fixture("load_balancing_loss", 60,
                        {"--problem", "24", "--dtype", "fp32", "--param", "M=96", "--param", "NE=8", "--param", "K=2"});
  EXPECT_EQ(j.value("status", ""), "correct") << j.dump(2).substr(0, 3000);
  EXPECT_EQ(j["sandbox"]["rank_program"], "pkb-rank");
}

// --draw-copies on where inputs cannot be drawn in place (a prepare step finishes them): copies are made on the host
// as before, and the record says why. Scatter, whose root's input is W times the others', draws per rank.
TEST(Eval, DrawnCopiesWhereInputsAllowThem) {
  auto prepared = eval_fixture("load_balancing_loss", 60,
                               {"--problem", "24", "--dtype", "fp32", "--param", "M=96", "--param", "NE=8", "--param",
                                "K=2", "--draw-copies", "on"});
  EXPECT_EQ(prepared.value("status", ""), "correct") << prepared.dump(2).substr(0, 3000);
  const auto& p = prepared["timing"]["candidate"];
  EXPECT_FALSE(p.contains("copies_drawn_in_place"));
  EXPECT_NE(p.value("copies_not_drawn", "").find("prepare step"), std::string::npos) << p.dump(2).substr(0, 2000);
  EXPECT_GT(p["input_copies_made"].get<int>(), 0);
  auto scatter =
      eval_fixture("scatter", 60, {"--problem", "5", "--param", "M=32", "--param", "N=16", "--draw-copies", "on"});
  EXPECT_EQ(scatter.value("status", ""), "correct") << scatter.dump(2).substr(0, 3000);
  EXPECT_GT(scatter["timing"]["candidate"].value("copies_drawn_in_place", 0), 0);
}

// Scatter's root holds W slices, the other ranks one: a timing plan sized by each rank's own inputs differed between
// the ranks (more copies fit the smaller ones), so the reference pass computed other copies' outputs on rank 1 than
// the candidate's checked calls used ("copyK/rank1.safetensors: cannot open"). The shapes make the copy budget bind
// (256 KiB and 128 KiB inputs: 128 and 256 copies fit in 32 MiB, fewer than the plan's calls).
TEST(Eval, RanksWithDifferentInputShapesShareOneTimingPlan) {
  pkb::test::TempDir tmp;
  auto src = (pkb::repo_root() / "tests/fixtures/cpu/scatter.cpp").string();
  pkb::test::CliRun r =
      pkb::test::run_cli(PKB_BINARY, pkb::test::joined({{
                                                            "eval",
                                                            src,
                                                            "--problem",
                                                            "5",
                                                            "-w",
                                                            "2",
                                                            "--device",
                                                            "cpu",
                                                            "--param",
                                                            "M=256",
                                                            "--param",
                                                            "N=256",
                                                            "--trials",
                                                            "1",
                                                            "--warmup",
                                                            "1",
                                                            "--iters",
                                                            "5",
                                                        },
                                                        pkb::test::kShortTiming,
                                                        {"--out", (tmp.path() / "eval").string(), "--cache",
                                                         (tmp.path() / "cache").string(), "--json"}}));
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out << r.err;
  EXPECT_EQ(j.value("status", ""), "correct") << j.value("message", "");
  EXPECT_EQ(r.exit_code, 0);
  ASSERT_TRUE(j["checks"].contains("timed_calls_checked")) << j.dump(2).substr(0, 2000);
  int checked = j["checks"]["timed_calls_checked"].get<int>();
  EXPECT_GE(checked, 1);
  int timed_on_rank1 = 0;
  for (const auto& c : j["checks"]["comparisons"])
    if (!c.contains("trial") && c.value("rank", -1) == 1) ++timed_on_rank1;
  EXPECT_EQ(timed_on_rank1, checked);
  // Every rank of the reference pass recorded the same plan.
  auto records = pkb::read_rank_records(j["reference"]["cache_dir"].get<std::string>(), 2);
  ASSERT_EQ(records.size(), 2u);
  ASSERT_TRUE(records[0] && records[1]);
  EXPECT_TRUE(records[0]->timed_checks.has_value());
  EXPECT_EQ(records[0]->timed_checks, records[1]->timed_checks);
  EXPECT_EQ(records[0]->candidate_input_copies, records[1]->candidate_input_copies);
}

// --timing-method picks which of the two recorded timings is `speedup`; an unknown method is a usage error.
TEST(Eval, TimingMethodPicksTheSpeedup) {
  pkb::test::TempDir tmp;
  auto src = (pkb::repo_root() / "tests/fixtures/cpu/correct.cpp").string();
  std::vector<std::string> args = {"eval",
                                   src,
                                   "--problem",
                                   "1",
                                   "-w",
                                   "2",
                                   "--device",
                                   "cpu",
                                   "--param",
                                   "M=64",
                                   "--param",
                                   "N=48",
                                   "--trials",
                                   "1",
                                   "--warmup",
                                   "1",
                                   "--iters",
                                   "5",
                                   "--paper-warmup",
                                   "5",
                                   "--paper-iters",
                                   "5",
                                   "--min-reps",
                                   "1",
                                   "--max-reps",
                                   "2",
                                   "--out",
                                   (tmp.path() / "eval").string(),
                                   "--cache",
                                   PKB_TEST_CACHE,
                                   "--json"};
  auto paper = args;
  paper.insert(paper.end(), {"--timing-method", "paper"});
  pkb::test::CliRun r = pkb::test::run_cli(PKB_BINARY, paper);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  const auto& t = j["timing"];
  EXPECT_EQ(t["method"], "paper");
  EXPECT_LE(t["candidate"]["reps"].get<int>(), 2);
  EXPECT_DOUBLE_EQ(t["speedup"].get<double>(), t["by_method"]["paper"]["speedup"].get<double>());
  EXPECT_NE(t["by_method"]["pkb"]["speedup"].get<double>(), t["speedup"].get<double>());
  auto bad = args;
  bad.insert(bad.end(), {"--timing-method", "fast"});
  pkb::test::CliRun b = pkb::test::run_cli(PKB_BINARY, bad);
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("--timing-method"), std::string::npos) << b.err;
  // CPU ranks make no device view: the device method is refused, saying why, not scored as an empty speedup.
  auto device = args;
  device.insert(device.end(), {"--timing-method", "device"});
  pkb::test::CliRun d = pkb::test::run_cli(PKB_BINARY, device);
  EXPECT_EQ(d.exit_code, 2) << d.out;
  EXPECT_NE(d.err.find("CPU ranks make no device view"), std::string::npos) << d.err;
  auto reps = args;
  reps.insert(reps.end(), {"--min-reps", "3", "--max-reps", "2"});
  pkb::test::CliRun m = pkb::test::run_cli(PKB_BINARY, reps);
  EXPECT_EQ(m.exit_code, 2);
  EXPECT_NE(m.err.find("--min-reps"), std::string::npos) << m.err;
}

// validate --time times both baselines with both methods: libtorch on MPI ranks and reference.py on gloo;
// --timing-repeats times them again, for the spread of their medians.
TEST(Validate, TimesBothBaselinesWithBothMethods) {
  pkb::test::TempDir tmp;
  pkb::test::CliRun r = pkb::test::run_cli(PKB_BINARY, {"validate",
                                                        "1",
                                                        "--small",
                                                        "-w",
                                                        "2",
                                                        "--device",
                                                        "cpu",
                                                        "--dtype",
                                                        "fp32",
                                                        "--python",
                                                        "on",
                                                        "--trials",
                                                        "1",
                                                        "--time",
                                                        "--warmup",
                                                        "1",
                                                        "--iters",
                                                        "5",
                                                        "--paper-warmup",
                                                        "5",
                                                        "--paper-iters",
                                                        "5",
                                                        "--min-reps",
                                                        "1",
                                                        "--max-reps",
                                                        "2",
                                                        "--timing-repeats",
                                                        "2",
                                                        "--through-gate",
                                                        "--out",
                                                        tmp.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("paper method"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("timed with the runner's doorbell"), std::string::npos) << r.out;
  auto j = nlohmann::json::parse(pkb::file_tail(tmp.path() / "001_allreduce/w2_cpu_fp32/validation.json", 1 << 24));
  // CPU ranks time the libtorch baseline as an evaluation does, a runner's doorbell in every window; eager by its own
  // clock (--through-gate changes only GPUs' instrument).
  EXPECT_EQ(j["timing"]["instruments"]["libtorch_nccl"], "doorbell") << j["timing"].dump();
  EXPECT_EQ(j["timing"]["instruments"]["pytorch_eager"], "events");
  EXPECT_GT(j["timing"]["libtorch_nccl"].value("doorbell_us", 0.0), 0) << j["timing"]["libtorch_nccl"].dump();
  pkb::test::CliRun untimed = pkb::test::run_cli(PKB_BINARY, {"validate", "1", "--through-gate"});
  EXPECT_NE(untimed.exit_code, 0);
  EXPECT_NE(untimed.err.find("--time"), std::string::npos) << untimed.err;
  for (const char* base : {"libtorch_nccl", "pytorch_eager"}) {
    const auto& t = j["timing"][base];
    ASSERT_TRUE(t.is_object()) << base << " " << j["timing"].dump();
    int reps = t["reps"].get<int>();
    EXPECT_TRUE(reps >= 1 && reps <= 2) << base;
    EXPECT_EQ(t["iters"].get<int>(), 5 * reps) << base;
    EXPECT_EQ(t["paper"]["reps"].get<int>(), reps) << base;
    EXPECT_GT(t["paper"]["median_us"].get<double>(), 0) << base;
    EXPECT_TRUE(t.contains("iqr_us") && t.contains("stopped_by")) << base;
    EXPECT_EQ(t["clocks"]["available"], false) << base;
    EXPECT_EQ(t["repeat_medians_us"].size(), 2u) << base;  // --timing-repeats 2: two whole timings
    EXPECT_EQ(t["repeat_paper_medians_us"].size(), 2u) << base;
    EXPECT_DOUBLE_EQ(t["repeat_medians_us"][0].get<double>(), t["median_us"].get<double>()) << base;
  }
}

// Two evaluations needing the same uncached reference pass at once (parallel CI jobs, a run beside an eval): each
// computes it privately and one result is kept; neither sees the other's half-written files.
TEST(Eval, ConcurrentEvaluationsShareOneReferencePass) {
  pkb::test::TempDir tmp;
  auto src = (pkb::repo_root() / "tests/fixtures/cpu/correct.cpp").string();
  auto eval = [&](const std::string& out) {
    return pkb::test::run_cli(
        PKB_BINARY,
        pkb::test::joined({{
                               "eval",
                               src,
                               "--problem",
                               "1",
                               "-w",
                               "2",
                               "--device",
                               "cpu",
                               "--param",
                               "M=64",
                               "--param",
                               "N=40",
                               "--trials",
                               "3",
                               "--warmup",
                               "1",
                               "--iters",
                               "5",
                           },
                           pkb::test::kShortTiming,
                           {"--out", (tmp.path() / out).string(), "--cache", (tmp.path() / "cache").string()}}));
  };
  pkb::test::CliRun a, b;
  std::thread first([&] { a = eval("a"); });
  b = eval("b");
  first.join();
  EXPECT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_EQ(b.exit_code, 0) << b.out << b.err;
  int passes = 0, leftovers = 0;
  for (const auto& e : std::filesystem::directory_iterator(tmp.path() / "cache/reference"))
    (e.path().string().find(".work-") == std::string::npos ? passes : leftovers)++;
  EXPECT_EQ(passes, 1);
  EXPECT_EQ(leftovers, 0);
}

}  // namespace

namespace {

// The compile cache's entry directories (not the work directories of builds in flight).
std::vector<std::filesystem::path> compile_entries(const std::filesystem::path& cache) {
  std::vector<std::filesystem::path> out;
  for (const auto& e : std::filesystem::directory_iterator(cache / "compile"))
    if (e.path().filename().string().find(".work-") == std::string::npos) out.push_back(e.path());
  return out;
}

}  // namespace

// A compile-cache entry that says the compile failed is believed only with the digest pkb writes for its key and
// log: one planted for an honest kernel (or edited, or written for another source) is discarded and the kernel
// compiled again, so its verdict stays its own.
TEST(Eval, AForgedCompileFailureInTheCacheIsNotBelieved) {
  pkb::test::TempDir tmp;
  auto src = (pkb::repo_root() / "tests/fixtures/cpu/correct.cpp").string();
  auto eval = [&] {
    return pkb::test::run_cli(
        PKB_BINARY, pkb::test::joined({{"eval", src, "--problem", "1", "-w", "2", "--device", "cpu", "--param", "M=64",
                                        "--param", "N=48", "--trials", "1", "--warmup", "1", "--iters", "3"},
                                       pkb::test::kShortTiming,
                                       {"--out", (tmp.path() / "out").string(), "--cache",
                                        (tmp.path() / "cache").string(), "--json"}}));
  };
  pkb::test::CliRun first = eval();
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  auto entries = compile_entries(tmp.path() / "cache");
  ASSERT_EQ(entries.size(), 1u);
  const auto entry = entries[0];
  auto honest = nlohmann::json::parse(pkb::read_text_file(entry / "result.json"));
  ASSERT_EQ(honest["status"], "ok");

  const std::string digest_of_another_log = std::string(64, '0');
  for (const nlohmann::json& forged :
       {nlohmann::json{{"status", "compile_error"}, {"log", "candidate.cpp:1:1: error: forged\n"}},
        nlohmann::json{{"status", "compile_error"},
                       {"log", "candidate.cpp:1:1: error: forged\n"},
                       {"failure_sha256", digest_of_another_log}},
        nlohmann::json{{"status", "lint_violation"}, {"log", "line 1 [process]: fork()\n"}}}) {
    std::filesystem::remove(entry / "candidate.so");
    pkb::test::write_file(entry / "result.json", forged.dump());
    pkb::test::CliRun again = eval();
    EXPECT_EQ(again.exit_code, 0) << forged.dump() << "\n" << again.out << again.err;
    auto j = nlohmann::json::parse(again.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << again.out << again.err;
    EXPECT_EQ(j.value("status", ""), "correct") << forged.dump() << ": " << j.value("message", "");
    EXPECT_EQ(j["compile"]["status"], "ok");
    EXPECT_FALSE(j["compile"]["cached"].get<bool>()) << "compiled again";
    EXPECT_EQ(nlohmann::json::parse(pkb::read_text_file(entry / "result.json"))["status"], "ok") << "entry rebuilt";
  }
}
