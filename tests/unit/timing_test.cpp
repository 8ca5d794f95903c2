// The timing method's arithmetic (harness/src/worker/timing.h): statistics, the stop rule, the L2 rotation and
// the copy plan that keeps timed calls checked. The loop itself runs under MPI in timing_mpi_test.cpp.
#include "worker/timing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "eval/evaluate.h"
#include "launch/jobs.h"
#include "seal/seal.h"
#include "spec/catalog.h"
#include "test_util.h"
#include "worker/worker.h"
#include "worker/worker_cli.h"

namespace pkb {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(TimingStats, MedianIqrAndQuantilesInterpolate) {
  SampleStats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.n, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.q25, 2);
  EXPECT_DOUBLE_EQ(s.q75, 4);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.5));
  EXPECT_DOUBLE_EQ(summarize({1, 2, 3, 4}).median, 2.5);
  EXPECT_DOUBLE_EQ(quantile_sorted({10, 20}, 0.25), 12.5);
  EXPECT_EQ(summarize({}).n, 0);
}

TEST(TimingStats, MedianIntervalFromOrderStatistics) {
  // n = 100: ranks 50 -+ 9.8 -> 40 and 61 (rounded outwards), the textbook ~95% interval.
  EXPECT_EQ(median_ci_ranks(100), std::make_pair(40, 61));
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  SampleStats s = summarize(v);
  EXPECT_DOUBLE_EQ(s.ci_low, 40);
  EXPECT_DOUBLE_EQ(s.ci_high, 61);
  EXPECT_NEAR(s.ci_half_rel(), 10.5 / 50.5, 1e-12);
  // Few values: the whole range, so three repetitions meet a 1% target only when they agree within 2%.
  SampleStats three = summarize({100, 101.9, 100.5});
  EXPECT_DOUBLE_EQ(three.ci_low, 100);
  EXPECT_DOUBLE_EQ(three.ci_high, 101.9);
  EXPECT_LT(three.ci_half_rel(), 0.01);
  EXPECT_GT(summarize({100, 103, 100.5}).ci_half_rel(), 0.01);
}

TEST(TimingStats, StopRule) {
  TimingOptions o;  // min 3, max 5 repetitions, 1%, 2 s
  SampleStats tight = summarize({100, 100.2, 100.4}), loose = summarize({100, 110, 120});
  EXPECT_FALSE(repetitions_done(o, 2, tight, tight, 0.1));  // below min_reps
  EXPECT_TRUE(repetitions_done(o, 3, tight, tight, 0.1));   // both CIs within 1%
  EXPECT_FALSE(repetitions_done(o, 3, tight, loose, 0.1));  // one method still wide
  EXPECT_TRUE(repetitions_done(o, 5, loose, loose, 0.1));   // max_reps
  EXPECT_TRUE(repetitions_done(o, 1, loose, loose, 2.5));   // budget spent, even before min_reps
}

TEST(TimingOptions, BadValuesNameTheOption) {
  TimingOptions o;
  o.min_reps = 4, o.max_reps = 2;
  try {
    o.validate();
    FAIL() << "accepted min_reps > max_reps";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--min-reps"), std::string::npos) << e.what();
  }
  o = {};
  o.ci_target = 0;
  EXPECT_THROW(o.validate(), Error);
  o = {};
  o.rep_gap_ms = -1;
  EXPECT_THROW(o.validate(), Error);
  EXPECT_NO_THROW(TimingOptions{}.validate());
  EXPECT_EQ(TimingOptions{}.to_args().size(), 24u);  // every option travels to pkb-rank and reference.py
  EXPECT_EQ(timing_method_from_name("paper"), TimingMethod::paper);
  EXPECT_FALSE(timing_method_from_name("fast"));
}

TEST(TimingRotation, CopiesExceedThreeTimesL2) {
  const size_t l2 = 60 * kMiB;  // H200
  const size_t calls = rotation_calls(TimingOptions{});
  EXPECT_EQ(calls, 10u + 500u + 5u * (50u + 100u + 50u));  // the warm-ups and five repetitions of every method
  // 2 MiB inputs: 91 copies, 182 MiB = 3.03x L2 (the old cap of 64 copies gave 2.13x).
  EXPECT_EQ(rotation_copies(2 * kMiB, l2, kRotationBudgetCuda, calls), 91);
  for (size_t bytes : {size_t{4096}, kMiB, 2 * kMiB, 7 * kMiB + 3, 64 * kMiB, 300 * kMiB}) {
    int n = rotation_copies(bytes, l2, kRotationBudgetCuda, calls);
    // Within the budget and the calls: always > 3x L2, or one copy per call (no call's inputs were used before).
    if (static_cast<size_t>(n + 1) * bytes <= kRotationBudgetCuda && static_cast<size_t>(n) < calls) {
      EXPECT_GT(n * bytes, 3 * l2) << bytes;
    }
    EXPECT_LE(n * bytes, std::max(bytes, kRotationBudgetCuda)) << bytes;
    EXPECT_LE(static_cast<size_t>(n), calls) << bytes;
  }
  // 4 KiB inputs would want 46081 copies, but a timing makes 1510 calls: a copy past the last is never used
  // (reference.py's timer once cloned 5 million copies of problem 23's 0-dim inputs, for hours).
  EXPECT_EQ(rotation_copies(4096, l2, kRotationBudgetCuda, calls), 1510);
  EXPECT_EQ(rotation_copies(4096, l2, kRotationBudgetCuda, 1 << 30), 46081);
  EXPECT_EQ(rotation_copies(kMiB, l2, 32 * kMiB, calls), 32);  // the budget caps
  EXPECT_EQ(rotation_copies(0, l2, kRotationBudgetCuda, calls), 1);
}

// run_reference.py times the PyTorch-eager baselines with harness/python/rotation.py's count and hold rule: the same
// as pkb-rank's for the same bytes, L2, budget and options (the eager and libtorch baselines rotate and hold alike).
TEST(TimingRotation, PythonRunnerCountsTheSameCopies) {
  test::TempDir tmp;
  TimingOptions o;
  o.warmup = 7, o.paper_warmup = 300, o.iters = 40, o.paper_iters = 60, o.max_reps = 4, o.device_iters = 30;
  const size_t l2 = 60 * kMiB;
  const std::vector<size_t> sizes = {0, 2, 30, 4096, 150000, kMiB, 2 * kMiB, 7 * kMiB + 3, 300 * kMiB, 3000 * kMiB};
  std::string script =
      "import sys\nsys.path.insert(0, sys.argv[1])\nfrom rotation import rotation_calls, "
      "rotation_count, initial_hold_us, next_hold_us\ncalls = rotation_calls(7, 300, 40, 60, 4, 30)\n"
      "print(calls, *[rotation_count(b, " +
      std::to_string(l2) + ", " + std::to_string(kRotationBudgetCuda) + ", calls) for b in " +
      nlohmann::json(sizes).dump() +
      "])\nprint(*['%g' % v for v in [initial_hold_us(x) for x in (0, 80.5, 9000)] + [next_hold_us(h, x) for h, x "
      "in ((100, 10), (100, 300), (4000, 10))]])\n";
  test::write_file(tmp.path() / "r.py", script);
  test::CliRun run =
      test::run_cli("python3", {(tmp.path() / "r.py").string(), (repo_root() / "harness/python").string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string expected = std::to_string(rotation_calls(o));
  for (size_t b : sizes)
    expected += " " + std::to_string(rotation_copies(b, l2, kRotationBudgetCuda, rotation_calls(o)));
  // The device view's hold rule too (rotation.py beside the counts): first hold, growth, and the cap.
  auto num = [](double x) {  // as Python's '%g'
    char b[32];
    std::snprintf(b, sizeof b, "%g", x);
    return std::string(b);
  };
  std::vector<double> holds = {initial_hold_us(0),    initial_hold_us(80.5),  initial_hold_us(9000),
                               next_hold_us(100, 10), next_hold_us(100, 300), next_hold_us(4000, 10)};
  std::string hold_line;
  for (double h : holds) hold_line += (hold_line.empty() ? "" : " ") + num(h);
  EXPECT_EQ(run.out, expected + "\n" + hold_line + "\n");
}

TEST(TimingCopies, EveryTimedCallHasFreshContentsApartFromWarmUps) {
  TimingOptions o;
  CopyPlan p = timing_copies(2 * kMiB, 60 * kMiB, o, kTimingCopyBudgetCuda);
  EXPECT_EQ(p.warmup_copies, 91);
  EXPECT_EQ(p.copies, 91 + o.max_timed_calls() + kEscapeProbeCalls);
  std::set<int> warm, timed;
  for (int i = 0; i < o.warmup_calls(); ++i) warm.insert(p.warmup_copy(i));
  for (int j = 0; j < o.max_timed_calls() + kEscapeProbeCalls; ++j)
    EXPECT_TRUE(timed.insert(p.timed_copy(j)).second) << j;
  for (int k : timed) EXPECT_FALSE(warm.count(k)) << k;
  for (int j = 0; j < o.max_timed_calls() + kEscapeProbeCalls; ++j) EXPECT_TRUE(p.fresh_call(j)) << j;
  // CPU ranks (no L2 figure): one warm-up copy.
  EXPECT_EQ(timing_copies(4096, 0, o, kTimingCopyBudgetCpu).warmup_copies, 1);
}

// Memory-bound: each fresh copy serves one timed call, those calls spread evenly over the plan's ordinals, and every
// other call revisits a warm-up copy (contents the warm-ups met), so every repetition's pkb block times both kinds
// side by side and a burst of load over any stretch of the timing hits both alike.
TEST(TimingCopies, WhereMemoryIsShortFreshAndRepeatedCallsInterleave) {
  TimingOptions o;
  CopyPlan tight = timing_copies(16 * kMiB, 60 * kMiB, o, 256 * kMiB);
  EXPECT_LE(static_cast<size_t>(tight.copies) * 16 * kMiB, 256 * kMiB);
  const int fresh_copies = tight.copies - tight.warmup_copies;
  ASSERT_EQ(tight.calls(), o.max_timed_calls() + kEscapeProbeCalls);
  const int pkb_calls = o.max_reps * o.iters;
  ASSERT_LT(fresh_copies, pkb_calls / 4) << "the case needs many more calls than fresh copies";
  std::set<int> fresh_seen;
  int fresh_calls = 0, last_fresh = -1, widest_gap = 0;
  for (int j = 0; j < tight.calls(); ++j) {
    const int k = tight.timed_copy(j);
    if (!tight.fresh_call(j)) {
      EXPECT_LT(k, tight.warmup_copies) << j << ": a repeated call revisits a warm-up copy";
      continue;
    }
    EXPECT_GE(k, tight.warmup_copies) << j;
    EXPECT_TRUE(fresh_seen.insert(k).second) << j << ": a fresh copy serves one call";
    EXPECT_LT(j % o.calls_per_rep(), o.iters) << j << ": the few fresh copies go to the pkb blocks";
    const int pkb_index = j / o.calls_per_rep() * o.iters + j % o.calls_per_rep();
    widest_gap = std::max(widest_gap, pkb_index - last_fresh);
    last_fresh = pkb_index, ++fresh_calls;
  }
  EXPECT_EQ(fresh_calls, fresh_copies);
  EXPECT_LE(widest_gap, pkb_calls / fresh_copies + 1) << "fresh calls spread evenly, not bunched at the start";
  for (int rep = 0; rep < o.max_reps; ++rep) {
    int fresh = 0;
    for (int i = 0; i < o.iters; ++i) fresh += tight.fresh_call(rep * o.calls_per_rep() + i);
    EXPECT_GT(fresh, 0) << "repetition " << rep << "'s pkb block has fresh calls";
    EXPECT_LT(fresh, o.iters) << "repetition " << rep << "'s pkb block has repeated calls";
  }
  // More fresh copies than pkb calls: every pkb call fresh, the rest spread over the other calls, each once.
  CopyPlan mid = copy_plan(4 + pkb_calls + 100, 4, o);
  std::set<int> copies;
  int other_fresh = 0;
  for (int j = 0; j < mid.calls(); ++j) {
    const bool pkb = j < o.max_timed_calls() && j % o.calls_per_rep() < o.iters;
    if (pkb) {
      EXPECT_TRUE(mid.fresh_call(j)) << j;
    }
    if (mid.fresh_call(j)) {
      EXPECT_TRUE(copies.insert(mid.timed_copy(j)).second) << j;
    }
    other_fresh += !pkb && mid.fresh_call(j);
  }
  EXPECT_EQ(other_fresh, 100);
  EXPECT_EQ(copies.size(), static_cast<size_t>(pkb_calls + 100));
}

TEST(TimingCopies, DrawsCheckEveryRepetitionThatRuns) {
  TimingOptions o;
  CopyPlan p = timing_copies(2 * kMiB, 60 * kMiB, o, kTimingCopyBudgetCuda);
  const int per = o.calls_per_rep();
  for (int i = 0; i < o.max_reps + 3; ++i) {
    uint64_t draw = 1234567 + 7919ull * i;
    int k = p.checked_copy(i, draw, o);
    EXPECT_EQ(p.first_rep_of(k, o), i < o.max_reps ? i : 0) << i;
    EXPECT_EQ(k, p.timed_copy((i < o.max_reps ? i : 0) * per + static_cast<int>(draw % per)));
  }
  EXPECT_EQ(p.first_rep_of(0, o), -1);  // a warm-up copy is never a timed call's
}

// The paper warm-up runs in chunks until paper_warmup calls ran or its budget is spent; reference.py's copy of
// the rule gives the same chunks.
TEST(TimingOptions, PaperWarmupRunsInChunksUntilItsCountOrBudget) {
  TimingOptions o;  // paper_warmup 500, budget 1 s, chunks of 50
  EXPECT_EQ(o.next_paper_warmup_chunk(0, 0), 50);
  EXPECT_EQ(o.next_paper_warmup_chunk(450, 0.5), 50);
  EXPECT_EQ(o.next_paper_warmup_chunk(480, 0.5), 20);  // never past paper_warmup
  EXPECT_EQ(o.next_paper_warmup_chunk(500, 0.1), 0);
  EXPECT_EQ(o.next_paper_warmup_chunk(50, 1.0), 0);  // budget spent: 50 calls of a 20 ms problem
  int done = 0;  // a 20 ms call: the chunk that crosses the budget finishes, then no more
  for (int chunk; (chunk = o.next_paper_warmup_chunk(done, done * 0.020)) > 0;) done += chunk;
  EXPECT_EQ(done, 50);
  o.paper_warmup = 0;
  EXPECT_EQ(o.next_paper_warmup_chunk(0, 0), 0);
  o.paper_warmup_budget_s = 0;
  EXPECT_THROW(o.validate(), Error);

  const std::string& python = python_with_torch();
  ASSERT_FALSE(python.empty()) << "no python3 here can import torch";
  test::TempDir tmp;
  test::write_file(
      tmp.path() / "w.py",
      "import sys, types\nsys.path.insert(0, sys.argv[1])\nimport run_reference as r\n"
      "o = types.SimpleNamespace(paper_warmup=500, paper_warmup_budget=1.0)\n"
      "print(*[r.next_paper_warmup_chunk(o, d, s) for d, s in ((0, 0), (450, 0.5), (480, 0.5), (500, 0.1), "
      "(50, 1.0))])\n");
  test::CliRun run = test::run_cli(python, {(tmp.path() / "w.py").string(), (repo_root() / "harness/python").string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "50 50 20 0 0\n");
}

TEST(TimingClocks, UnavailableWithoutNvml) {
  ClockMonitor cpu(-1);
  cpu.sample(0, "before");
  EXPECT_EQ(cpu.to_json()["available"], false);
  EXPECT_FALSE(cpu.throttled());
  EXPECT_EQ(throttle_reason_names(0x1 | 0x4 | 0x40), (std::vector<std::string>{"sw_power_cap", "hw_thermal_slowdown"}));
  EXPECT_TRUE(throttle_reason_names(0x1 | 0x2).empty());  // idle and application clocks are not throttling
}

// The chase probe's table is one cycle: a walk from anywhere visits every entry before it returns, so the probe's
// 8192 steps touch 8192 distinct entries (no short loop the cache or the predictor could learn).
TEST(TimingHostProbe, ChaseTableIsOneCycleThroughEveryEntry) {
  for (uint32_t n : {2u, 3u, 1000u, 1u << 18}) {
    std::vector<uint32_t> next = single_cycle_permutation(n, 0x5eed);
    std::vector<bool> seen(n, false);
    uint32_t at = 0, steps = 0;
    do {
      ASSERT_LT(next[at], n);
      ASSERT_FALSE(seen[at]) << "entry " << at << " visited twice at n = " << n;
      seen[at] = true;
      at = next[at];
      ++steps;
    } while (at != 0 && steps <= n);
    EXPECT_EQ(steps, n) << "the cycle from 0 misses entries at n = " << n;
  }
  EXPECT_EQ(single_cycle_permutation(1000, 7), single_cycle_permutation(1000, 7));
  EXPECT_NE(single_cycle_permutation(1000, 7), single_cycle_permutation(1000, 8));
  double t = host_chase_probe_us();
  EXPECT_TRUE(t > 0 && t < 1e6) << t;
}

// reference.py's timing (harness/python/run_reference.py) must summarize exactly as pkb-rank does, or its
// PyTorch-eager baseline would not be comparable.
TEST(TimingStats, PythonRunnerSummarizesTheSame) {
  test::TempDir tmp;
  std::vector<double> v = {31.5, 29.25, 30, 45, 28.75, 30.5, 29.5, 33, 30.25, 29};
  std::string script =
      "import json, sys\nsys.path.insert(0, sys.argv[1])\nimport run_reference as r\n"
      "print(json.dumps(r.summarize(json.loads(sys.argv[2]))))\n";
  test::write_file(tmp.path() / "s.py", script);
  std::vector<std::string> args = {(tmp.path() / "s.py").string(), (repo_root() / "harness/python").string(),
                                   nlohmann::json(v).dump()};
  const std::string& python = python_with_torch();  // the interpreter pkb runs reference.py with
  ASSERT_FALSE(python.empty()) << "no python3 here can import torch";
  test::CliRun run = test::run_cli(python, args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto py = nlohmann::json::parse(run.out);
  SampleStats s = summarize(v);
  EXPECT_DOUBLE_EQ(py["median_us"].get<double>(), s.median);
  EXPECT_DOUBLE_EQ(py["q25_us"].get<double>(), s.q25);
  EXPECT_DOUBLE_EQ(py["q75_us"].get<double>(), s.q75);
  EXPECT_DOUBLE_EQ(py["ci95_low_us"].get<double>(), s.ci_low);
  EXPECT_DOUBLE_EQ(py["ci95_high_us"].get<double>(), s.ci_high);
  EXPECT_NEAR(py["stddev_us"].get<double>(), s.stddev, 1e-12);
}

}  // namespace
}  // namespace pkb

namespace {

// What pkb-rank parses from `args` (its own flag definitions).
pkb::WorkerOptions parse_worker_args(const std::vector<std::string>& args) {
  CLI::App app;
  pkb::WorkerOptions o;
  pkb::add_worker_flags(app, o);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  app.parse(reversed);
  return o;
}

}  // namespace

// The driver's to_args and pkb-rank's parser agree on every option, defaults included.
TEST(WorkerArgs, RoundTripEveryOption) {
  pkb::WorkerOptions o;
  o.problem_dir = "/pkb/problems/001_allreduce";
  o.device = pkb::DeviceKind::cuda;
  o.dtype = "fp32";
  o.trials = {0, 1, 2};
  o.seed = 18446744073709551615ull;
  o.params = {"M=64", "N=48"};
  o.out_dir = "/tmp/out dir";
  o.save_inputs = o.precise = o.precise_too = o.time = true;
  o.timing.iters = 7;
  o.timing.max_reps = 9;
  o.timing.rep_gap_ms = 12.5;
  o.timing.ci_target = 0.02;
  o.post_trial = 3;
  o.candidate = "/pkb/candidate.so";
  o.heap_mib = 512;
  o.seal_dir = "/pkb/seal";
  o.rotation_copies = 91;
  o.warmup_copies = 4;
  o.timed_checks = {1, 18446744073709551615ull};
  o.runner_hidden = {"/srv/cache dir", "/srv/run"};
  o.captured_copies = {3, 77};
  o.candidate_process = pkb::CandidateProcess::in_process;
  pkb::WorkerOptions p = parse_worker_args(pkb::to_args(o));
  EXPECT_EQ(p.problem_dir, o.problem_dir);
  EXPECT_EQ(p.device, o.device);
  EXPECT_EQ(p.dtype, o.dtype);
  EXPECT_EQ(p.trials, o.trials);
  EXPECT_EQ(p.seed, o.seed);
  EXPECT_EQ(p.params, o.params);
  EXPECT_EQ(p.out_dir, o.out_dir);
  EXPECT_TRUE(p.save_inputs && p.precise && p.precise_too && p.time);
  EXPECT_EQ(p.timing.to_args(), o.timing.to_args());
  EXPECT_EQ(p.post_trial, o.post_trial);
  EXPECT_EQ(p.candidate, o.candidate);
  EXPECT_EQ(p.heap_mib, o.heap_mib);
  EXPECT_EQ(p.seal_dir, o.seal_dir);
  EXPECT_EQ(p.rotation_copies, o.rotation_copies);
  EXPECT_EQ(p.warmup_copies, o.warmup_copies);
  EXPECT_EQ(p.timed_checks, o.timed_checks);
  EXPECT_EQ(p.runner_hidden, o.runner_hidden);
  EXPECT_EQ(p.captured_copies, o.captured_copies);
  EXPECT_EQ(p.candidate_process, o.candidate_process);

  pkb::WorkerOptions batch;
  batch.batch_file = "/tmp/batch.json";
  pkb::WorkerOptions q = parse_worker_args(pkb::to_args(batch));
  EXPECT_EQ(q.batch_file, batch.batch_file);
  EXPECT_TRUE(q.problem_dir.empty() && q.out_dir.empty() && q.candidate.empty() && !q.time && !q.save_inputs);
  EXPECT_EQ(q.post_trial, batch.post_trial);
  EXPECT_EQ(q.trials, batch.trials);
}

// Candidates run in pkb-runner wherever they run, GPUs included, unless a GPU candidate is asked into the rank
// program; the rank programs and the driver read it the same way.
TEST(CandidateProcess, TheRunnerIsTheDefaultOnEveryDevice) {
  using pkb::CandidateProcess;
  EXPECT_TRUE(pkb::candidate_in_runner(CandidateProcess::automatic, true));
  EXPECT_TRUE(pkb::candidate_in_runner(CandidateProcess::runner, true));
  EXPECT_FALSE(pkb::candidate_in_runner(CandidateProcess::in_process, true));
  EXPECT_TRUE(pkb::candidate_in_runner(CandidateProcess::in_process, false));  // CPU ranks: always
  pkb::WorkerOptions w;
  w.device = pkb::DeviceKind::cuda;
  pkb::EvalOptions e;
  e.device = pkb::DeviceKind::cuda;
  EXPECT_TRUE(w.uses_runner() && e.uses_runner());
  w.candidate_process = e.candidate_process = CandidateProcess::in_process;
  EXPECT_FALSE(w.uses_runner() || e.uses_runner());
  EXPECT_EQ(pkb::enum_from_name<CandidateProcess>("in-process").value_or(CandidateProcess::runner),
            CandidateProcess::in_process);
}

// The timing section as the timing loop writes it (TimingStats::to_record, protocol/rank_record.h) reads back as the
// same JSON, with each optional part present or not: every key the writer spells, the reader knows.
TEST(TimingRecord, WhatTheLoopWritesReadsBack) {
  pkb::TimingStats s;
  s.pkb.values_us = {10, 11, 12, 13};
  s.pkb.stats = pkb::summarize(s.pkb.values_us);
  s.paper.values_us = {9, 9.5};
  s.paper.stats = pkb::summarize(s.paper.values_us);
  s.reps = 2, s.stopped_by = "budget", s.paper_warmup_calls = 50, s.host_loop_us = 500;
  s.repeated_content_iters = 2;
  s.fresh = pkb::summarize({12, 13}), s.repeated = pkb::summarize({10, 11});
  s.clocks = {{"available", false}};
  s.host_probe_us = {30, 31}, s.host_chase_probe_us = {300, 301};
  s.dispatch_note = "not pinned";
  s.device.method.values_us = {8, 8.5};
  s.device.method.stats = pkb::summarize(s.device.method.values_us);
  s.device.calls = 3, s.device.unheld = 1, s.device.hold_us = 40;
  for (int variant = 0; variant < 3; ++variant) {
    if (variant == 1) s.device.method = {}, s.device.note = "no call was held", s.dispatch_cpu = 1;
    if (variant == 2) s.device.calls = 0, s.repeated = {};
    const nlohmann::json j = s.to_json();
    EXPECT_EQ(nlohmann::json(j.get<pkb::protocol::RankTiming>()), j) << "variant " << variant;
    EXPECT_EQ(nlohmann::json::parse(j.dump()).get<pkb::protocol::RankTiming>(), s.to_record()) << "variant " << variant;
    EXPECT_DOUBLE_EQ(j["median_us"].get<double>(), s.pkb.stats.median);
    EXPECT_DOUBLE_EQ(j["iqr_us"].get<double>(), s.pkb.stats.q75 - s.pkb.stats.q25);
    EXPECT_EQ(j["iters"], 4);
    EXPECT_EQ(j["paper"]["reps"], 2);
    EXPECT_EQ(j.contains("fresh_ci95_low_us"), variant < 2);
    EXPECT_EQ(j.contains("dispatch_note"), variant == 0);
    EXPECT_EQ(j.contains("device"), variant < 2);
    if (variant < 2) {
      EXPECT_EQ(j["device"].contains("median_us"), variant == 0);
    }
  }
}
