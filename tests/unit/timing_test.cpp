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

// host_drift: the candidate's and the baseline's host probes (medians) more than 1.2x apart, either way.
TEST(TimingHostProbe, DriftFlagsProbesFarApartEitherWay) {
  auto timing = [](std::vector<double> probes) {
    pkb::protocol::RankTiming t;
    t.host_chase_probe_us = probes;
    return std::optional(t);
  };
  nlohmann::json same = host_speed_comparison(timing({100, 300, 101}), timing({99, 100, 102}));
  EXPECT_NEAR(same["host_speed_ratio"].get<double>(), 101.0 / 100, 1e-12);  // medians: one outlier is ignored
  EXPECT_FALSE(same["host_drift"].get<bool>());
  EXPECT_TRUE(host_speed_comparison(timing({130}), timing({100}))["host_drift"].get<bool>());
  EXPECT_TRUE(host_speed_comparison(timing({100}), timing({130}))["host_drift"].get<bool>());
  EXPECT_FALSE(host_speed_comparison(timing({119}), timing({100}))["host_drift"].get<bool>());
  // A record from before the probe (or without it) claims nothing.
  EXPECT_TRUE(host_speed_comparison(timing({100}), timing({})).empty());
  EXPECT_TRUE(host_speed_comparison(std::nullopt, timing({100})).empty());
  EXPECT_FALSE(pkb::host_speed(std::nullopt, timing({100})).has_value());
  EXPECT_TRUE(pkb::host_speed(timing({130}), timing({100}))->drift);
}

// repeat_faster: calls on repeated contents beyond 1.25x faster than on fresh ones, past both medians' intervals.
TEST(RepeatFaster, FlagsOnlyASpeedupOnRepeatsBeyondNoise) {
  auto timing = [](double fresh, double fresh_low, double repeated, double repeated_high) {
    pkb::protocol::RankTiming t;
    t.repeated_content_iters = 20;
    t.fresh_median_us = fresh;
    t.repeated_median_us = repeated;
    t.intervals = pkb::protocol::ContentIntervals{20, fresh_low, fresh, repeated, repeated_high};
    return std::optional(t);
  };
  // A memoizer: every fresh call does the work its repeats skip.
  nlohmann::json memo = repeat_faster(timing(2100, 2050, 60, 80));
  ASSERT_TRUE(memo.is_object());
  EXPECT_NEAR(memo["ratio"].get<double>(), 35, 1e-12);
  EXPECT_DOUBLE_EQ(memo["fresh_ci95_low_us"].get<double>(), 2050);
  // Honest calls on a loaded host: the fresh median 1.5x the repeated one, but its few calls' interval reaches it.
  EXPECT_TRUE(repeat_faster(timing(30000, 14000, 20000, 23000)).is_null());
  EXPECT_TRUE(repeat_faster(timing(1250, 1250, 1000, 1000)).is_null());  // 1.25x exactly is not beyond it
  // No repeated contents, or no fresh calls to compare with: nothing to flag.
  auto none = timing(2100, 2050, 60, 80);
  none->repeated_content_iters = 0;
  EXPECT_TRUE(repeat_faster(none).is_null());
  EXPECT_TRUE(repeat_faster(timing(0, 0, 60, 80)).is_null());
  EXPECT_TRUE(repeat_faster(std::nullopt).is_null());
  // Without the intervals (both kinds' calls not recorded), the medians themselves are compared.
  auto medians_only = timing(2100, 2050, 60, 80);
  medians_only->intervals.reset();
  EXPECT_NEAR(repeat_faster(medians_only)["fresh_ci95_low_us"].get<double>(), 2100, 1e-12);
}

// repeats_may_be_faster: each fresh call against the repeated calls beside it, noise or not; where it holds the paper
// and device methods claim no time. A memoizer on a host so loaded that its intervals overlap is no flag (above) but
// keeps no paper speedup; an honest kernel whose fresh calls fell in a burst of load keeps its claims (its neighbours
// were stretched alike).
TEST(RepeatFaster, TimeClaimsNeedEachFreshCallToMatchItsNeighbours) {
  // Calls in order: fresh (F) and repeated (r) alternate, as the copy plan spreads them.
  const std::vector<bool> kinds = {true, false, true, false, true, false, true, false, true, false};
  // A memoizer under load: every fresh call does 2 ms of work beside repeats that skip it, the load on both.
  const std::vector<double> memo = {4100, 1900, 6000, 3500, 2600, 700, 9000, 6800, 3000, 900};
  // An honest kernel: the first six calls in a 20 ms burst, the rest at 1 ms.
  const std::vector<double> burst = {21000, 20500, 21200, 20800, 21100, 20900, 1000, 1010, 990, 1005};
  EXPECT_GT(pkb::fresh_to_neighbours(memo, kinds), 1.25);
  EXPECT_LT(pkb::fresh_to_neighbours(burst, kinds), 1.25);
  EXPECT_EQ(pkb::fresh_to_neighbours(memo, std::vector<bool>(kinds.size(), true)), 0.0);  // no repeats: no ratio

  auto timing = [](double fresh, double repeated, std::optional<double> neighbours) {
    pkb::protocol::RankTiming t;
    t.repeated_content_iters = 20;
    t.fresh_median_us = fresh;
    t.repeated_median_us = repeated;
    t.fresh_to_neighbours = neighbours;
    t.intervals = pkb::protocol::ContentIntervals{20, fresh / 10, fresh, repeated, repeated * 10};
    return std::optional(t);
  };
  EXPECT_TRUE(repeat_faster(timing(8000, 900, 3.0)).is_null());  // the intervals overlap: no flag
  EXPECT_TRUE(pkb::repeats_may_be_faster(timing(8000, 900, 3.0)));
  EXPECT_FALSE(pkb::repeats_may_be_faster(timing(8000, 900, 1.02)));         // a burst on the fresh calls' stretch
  EXPECT_TRUE(pkb::repeats_may_be_faster(timing(8000, 900, std::nullopt)));  // an older record: the medians
  EXPECT_FALSE(pkb::repeats_may_be_faster(timing(1240, 1000, std::nullopt)));
  auto none = timing(8000, 900, 3.0);
  none->repeated_content_iters = 0;
  EXPECT_FALSE(pkb::repeats_may_be_faster(none));
  EXPECT_FALSE(pkb::repeats_may_be_faster(std::nullopt));
}

// below_roofline: a method's candidate time more than kBelowRooflineFactor below the floor, and only that.
TEST(BelowRoofline, FlagsTimesTheHardwareCannotReach) {
  const nlohmann::json roof = {{"floor_us", 100.0}, {"bound", "hbm"}};
  auto by_method = [](double pkb, double paper, double device) {
    return nlohmann::json{{"pkb", {{"candidate_us", pkb}, {"speedup", 9.0}}},
                          {"paper", {{"candidate_us", paper}}},
                          {"device", {{"candidate_us", device}}}};
  };
  // A kernel at 60 us against a 100 us floor (SOL% 167): within the floor's slack (peak rates, in-switch reductions,
  // writes absorbed by the L2), never flagged; an honest kernel near the roofline is not either.
  EXPECT_TRUE(below_roofline(roof, by_method(60, 100 / kBelowRooflineFactor, 250)).is_null());
  EXPECT_TRUE(below_roofline(roof, by_method(101, 120, 0)).is_null());  // 0: the method claims no time
  // A forged or mistimed call: 3 us on the pkb method, 40 on the device view.
  nlohmann::json b = below_roofline(roof, by_method(3, 120, 40));
  ASSERT_TRUE(b.is_object());
  EXPECT_DOUBLE_EQ(b["floor_us"].get<double>(), 100);
  EXPECT_DOUBLE_EQ(b["factor"].get<double>(), kBelowRooflineFactor);
  EXPECT_EQ(b["bound"], "hbm");
  EXPECT_EQ(b["methods"], (nlohmann::json{{"pkb", 3.0}, {"device", 40.0}}));
  // No floor (a problem without a roofline, or none computed): nothing to compare with.
  EXPECT_TRUE(below_roofline(nlohmann::json{{"floor_us", 0.0}}, by_method(3, 3, 3)).is_null());
  EXPECT_TRUE(below_roofline(nlohmann::json(), by_method(3, 3, 3)).is_null());
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

// Each side's instrument, as the record names it: a GPU candidate in a runner crosses the call gate between two
// processes while the libtorch baseline's gated view is two streams of one; in process both are events; CPU runners
// ring a doorbell on both sides; reference.py is always its own events, listed only where it was timed.
TEST(CandidateProcess, TheRecordNamesEachSidesInstrument) {
  using nlohmann::json;
  using pkb::CandidateProcess;
  pkb::EvalOptions gpu;
  gpu.device = pkb::DeviceKind::cuda;
  EXPECT_EQ(pkb::timing_instruments(gpu, true), json({{"candidate", "call_gate"},
                                                      {"baseline_libtorch_nccl", "call_gate_one_process"},
                                                      {"baseline_pytorch_eager", "events"}}));
  gpu.candidate_process = CandidateProcess::in_process;
  EXPECT_EQ(pkb::timing_instruments(gpu, false), json({{"candidate", "events"}, {"baseline_libtorch_nccl", "events"}}));
  pkb::EvalOptions cpu;
  cpu.device = pkb::DeviceKind::cpu;
  cpu.candidate_process = CandidateProcess::in_process;  // CPU ranks: a runner all the same
  EXPECT_EQ(pkb::timing_instruments(cpu, false),
            json({{"candidate", "doorbell"}, {"baseline_libtorch_nccl", "doorbell"}}));
}

// Times that measure contention claim no speedup: ranks that shared a GPU, or a GPU runner whose CUDA context took
// turns with its monitor's (no MPS). A runner that MPS served, or a CPU-rank record, is timed as usual.
TEST(Verdict, ContentionIsNamedWhereTimesMeasureIt) {
  using nlohmann::json;
  EXPECT_EQ(pkb::contention_reason(json::object()), "");
  EXPECT_EQ(pkb::contention_reason(json{{"runner_mps", true}}), "");
  EXPECT_EQ(pkb::contention_reason(json{{"gpu_sharing", {{"note", "2 ranks share each GPU"}}}}),
            "2 ranks share each GPU");
  const std::string why = pkb::contention_reason(json{{"runner_mps", "nvidia-cuda-mps-control -d: exit 1"}});
  EXPECT_NE(why.find("without MPS"), std::string::npos) << why;
  EXPECT_NE(why.find("exit 1"), std::string::npos) << why;
}

// A bug in reading pkb's own records (here: a timing field of the wrong type, refused where the record is parsed,
// protocol/rank_record.h) is a harness_error, no verdict; any other failure while judging stays the candidate's
// runtime_error.
TEST(ProcessingFailure, AMisreadRecordIsAHarnessErrorNotTheCandidates) {
  nlohmann::json mistyped = pkb::protocol::RankTiming{};
  mistyped["fresh_median_us"] = "2100";  // a string where the monitor writes a number
  try {
    (void)mistyped.get<pkb::protocol::RankTiming>();
    FAIL() << "a mistyped record was read without complaint";
  } catch (const std::exception& e) {
    EXPECT_EQ(pkb::processing_failure_status(e), pkb::ResultStatus::harness_error) << e.what();
  }
  try {
    nlohmann::json header = nlohmann::json::parse("{\"status\":");  // a safetensors header that does not parse
    FAIL() << "parsed " << header.dump();
  } catch (const std::exception& e) {
    EXPECT_EQ(pkb::processing_failure_status(e), pkb::ResultStatus::harness_error) << e.what();
  }
  EXPECT_EQ(pkb::processing_failure_status(std::runtime_error("outputs of the wrong size")),
            pkb::ResultStatus::runtime_error);
}

// The candidate pass's records as the driver receives them over the sealed channel (eval/evaluate.h sealed_records):
// a record from a whole stream that does not parse is pkb's failure (ProtocolError, a harness_error, never the
// candidate's runtime_error); one from a stream that is not believed counts as none, and the stream's verdict stands
// (candidate code may have written it); a record that is not JSON breaks the channel.
TEST(SealedRecords, AMistypedRecordIsPkbsFailureUnlessItsStreamIsNotBelieved) {
  pkb::protocol::RankRecord rank0, rank1;
  rank0.pass = rank1.pass = pkb::protocol::RankPass::candidate;
  rank1.rank = 1, rank0.world = rank1.world = 2;
  rank1.trials = std::vector<pkb::protocol::RankTrial>(1);
  rank1.trials->front().trial = 0;
  rank1.trials->front().inputs_mutated = std::vector<std::string>{"tensor"};
  auto sealed = [](const nlohmann::json& record, const std::string& error = "") {
    pkb::SealedRank s;
    s.record = record.is_null() ? "" : record.dump();
    s.ended = error.empty();
    s.error = error;
    return s;
  };
  pkb::SealedRecords whole = pkb::sealed_records({sealed(rank0), sealed(rank1)});
  EXPECT_EQ(whole.seal_error, "");
  ASSERT_EQ(whole.records.size(), 2u);
  EXPECT_EQ(whole.records[1], rank1);
  EXPECT_FALSE(pkb::sealed_records({sealed(rank0), sealed(nullptr)}).records[1].has_value());

  nlohmann::json mistyped = rank1;
  mistyped["trials"][0]["inputs_mutated"] = "tensor";  // a string where the monitor writes a list
  try {
    (void)pkb::sealed_records({sealed(rank0), sealed(mistyped)});
    FAIL() << "a mistyped record was read without complaint";
  } catch (const std::exception& e) {
    EXPECT_EQ(pkb::processing_failure_status(e), pkb::ResultStatus::harness_error) << e.what();
    EXPECT_NE(std::string(e.what()).find("\"inputs_mutated\""), std::string::npos) << e.what();
  }
  // A forged record in an injected frame (tests/fixtures/adversarial/inject_frames.cpp): the stream is not believed.
  const nlohmann::json forged = {{"schema", "pkb.rank_record/1"}, {"status", "ok"}, {"timing", {{"median_us", 0.001}}}};
  pkb::SealedRecords injected = pkb::sealed_records({sealed(rank0), sealed(forged, "frame 4: out of sequence")});
  EXPECT_EQ(injected.seal_error, "frame 4: out of sequence");
  EXPECT_FALSE(injected.records[1].has_value());
  pkb::SealedRank garbled = sealed(rank0);
  garbled.record = "{\"schema\": ";
  EXPECT_NE(pkb::sealed_records({garbled}).seal_error.find("not JSON"), std::string::npos);
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
