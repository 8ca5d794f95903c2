// Candidates that attack the process they run in (tests/fixtures/adversarial, issue 34): GOT hooks of write,
// memcpy and the clock, writes through /proc/self/mem and a sibling rank's /proc/<pid>/mem, a code detour, heap and
// stack scans, a pipe over the sealed channel, record edits, the schedule read from /proc, a thread working during
// the warm-ups, first-visit-only work, return-address probes. Each must get the honest verdict: a wrong kernel is
// not `correct`; a slow one's time stays at or above its 2 ms of work (as the honest slow control's does); one
// that skips work in calls it believes unchecked is not `correct` when it did skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "../unit/test_util.h"
#include "core/files.h"
#include "spec/catalog.h"

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kFixtures = pkb::repo_root() / "tests/fixtures/adversarial";
const fs::path kShared = pkb::repo_root() / "tests/fixtures/cpu";
const fs::path kSharedCache = PKB_TEST_CACHE;  // the reference cache of the tests whose candidates leave it alone

// Timing for the slow kernels (2 ms a call): a paper warm-up of one 50-call chunk, two repetitions of each method.
const std::vector<std::string> kSlowTiming = {
    "--paper-warmup-budget", "0.05", "--paper-iters", "3", "--min-reps", "1", "--max-reps", "2"};
// Timing for the fast ones: the full paper warm-up (no budget cuts it), so nothing that counts calls is thrown off.
const std::vector<std::string> kFastTiming = {
    "--paper-warmup-budget", "600", "--paper-iters", "3", "--min-reps", "1", "--max-reps", "2"};
// Inputs of 2 MiB a rank: the 32 MiB a rank may spend on timing copies holds 15 fresh ones besides the warm-up copy,
// so of six repetitions of 8 timed calls, 15 calls get fresh contents (half the pkb blocks' calls, in every repetition)
// and the other 38 revisit the warm-up copy (the revisits are what first-visit attacks skip). All six repetitions
// always run (a budget no evaluation reaches): on a loaded host the default 2 s once stopped the timing before any
// repeated contents came back.
const std::vector<std::string> kRevisitShape = {
    "--param",    "M=1024", "--param",    "N=1024", "--paper-warmup-budget", "0.05", "--paper-iters", "3",
    "--min-reps", "6",      "--max-reps", "6",      "--timing-budget",       "600"};

struct Eval {
  json record;
  std::string logs;  // pkb's stdout and stderr, and every file the evaluation left (the candidate's stderr among them)
};

// `fixture` (a .cpp of tests/fixtures/adversarial, or of tests/fixtures/cpu) in a folder of its own beside
// fixture.h and inprocess.h, evaluated on problem 1 at W = 2 on CPU ranks in the sandbox.
// `macros` are prepended to the fixture's source.
Eval eval(const fs::path& dir, const std::string& fixture, const std::vector<std::string>& settings,
          const std::string& macros = "") {
  fs::create_directories(dir / "cand");
  for (const fs::path& h : {kShared / "fixture.h", kFixtures / "inprocess.h"})
    fs::copy_file(h, dir / "cand" / h.filename(), fs::copy_options::overwrite_existing);
  fs::path src = kFixtures / (fixture + ".cpp");
  if (!fs::exists(src)) src = kShared / (fixture + ".cpp");
  pkb::test::write_file(dir / "cand" / src.filename(), macros + pkb::read_text_file(src));
  std::vector<std::string> args = {"eval",      (dir / "cand" / src.filename()).string(),
                                   "--problem", "1",
                                   "-w",        "2",
                                   "--device",  "cpu",
                                   "--trials",  "2",
                                   "--warmup",  "1",
                                   "--iters",   "5"};
  bool shaped = std::find(settings.begin(), settings.end(), "--param") != settings.end();
  if (!shaped) args.insert(args.end(), {"--param", "M=64", "--param", "N=48"});
  args.insert(args.end(), settings.begin(), settings.end());
  args.insert(args.end(),
              {"--timeout", "120", "--out", (dir / "eval").string(), "--cache", kSharedCache.string(), "--json"});
  auto r = pkb::test::run_cli(PKB_BINARY, args, {}, 300);
  Eval e{json::parse(r.out, nullptr, false), r.out + r.err};
  EXPECT_FALSE(e.record.is_discarded()) << fixture << ": pkb eval printed no JSON record:\n" << r.out << r.err;
  if (e.record.is_discarded()) e.record = json::object();
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir / "eval", ec), end; !ec && it != end; it.increment(ec))
    if (it->is_regular_file() && it->path().filename() != "fixture.h") e.logs += pkb::read_text_file(it->path());
  return e;
}

std::string status(const Eval& e) { return e.record.value("status", ""); }
double median_us(const Eval& e) {
  return e.record.value("timing", json::object()).value("candidate", json::object()).value("median_us", 0.0);
}
std::string summary(const Eval& e) { return e.record.dump(2).substr(0, 3000); }

// A kernel that writes wrong outputs, whatever it does to the process around it, is not `correct`.
void expect_wrong_is_not_correct(const std::string& fixture) {
  pkb::test::TempDir tmp;
  Eval e = eval(tmp.path(), fixture, kFastTiming);
  EXPECT_NE(status(e), "correct") << fixture << " forged its outputs:\n" << summary(e);
}

constexpr double kSleepUs = 2000;  // the slow kernel's sleep (tests/fixtures/adversarial/inprocess.h)

// A kernel that does 2 ms of work a call, whatever it does to the timer, times at 2 ms or more: a loaded machine may
// stretch a sleep or a spin, never shrink it, and the attacks that worked (ef1618e) timed at 1-300 us. (The honest
// control, tests/fixtures/adversarial/slow_control.cpp, is the fixtures' template; it need not run beside each.)
// Returns the attack's evaluation.
Eval expect_slow_stays_slow(const std::string& fixture, const std::string& macros = "") {
  pkb::test::TempDir tmp;
  Eval attack = eval(tmp.path() / "attack", fixture, kSlowTiming, macros);
  if (status(attack) != "correct") return attack;  // a flagged run is no forged time
  const double floor_us = 0.9 * kSleepUs;
  EXPECT_GE(median_us(attack), floor_us) << fixture << " hid its time: " << median_us(attack) << " us\n"
                                         << summary(attack);
  return attack;
}

// A kernel that skips the work of calls it believes unchecked (it says so once on stderr) is not `correct`; where
// it could not tell the calls apart it never skipped, and `correct` is earned.
void expect_skipping_is_not_correct(const std::string& fixture, const std::vector<std::string>& settings) {
  pkb::test::TempDir tmp;
  Eval e = eval(tmp.path(), fixture, settings);
  const bool skipped = e.logs.find("in-process attack: skipped the work of a call") != std::string::npos;
  EXPECT_FALSE(status(e) == "correct" && skipped) << fixture << " skipped calls and was judged correct:\n"
                                                  << summary(e);
}

TEST(InProcess, WriteHookCannotForgeOutputFrames) { expect_wrong_is_not_correct("got_write"); }
TEST(InProcess, MemcpyHookCannotForgeCaptures) { expect_wrong_is_not_correct("got_memcpy"); }
TEST(InProcess, PipeOverTheSealCannotRewriteFrames) { expect_wrong_is_not_correct("seal_pipe"); }

// The template itself: honest, correct, and timed at its 2 ms.
TEST(InProcess, TheHonestSlowControlTimesAtItsWork) {
  Eval e = expect_slow_stays_slow("slow_control");
  EXPECT_EQ(status(e), "correct") << summary(e);
}
TEST(InProcess, ClockHookCannotHideTime) { expect_slow_stays_slow("got_clock"); }
TEST(InProcess, ProcSelfMemCannotShrinkTheTimer) { expect_slow_stays_slow("proc_self_mem"); }
TEST(InProcess, SiblingProcMemCannotShrinkAPeersTimer) { expect_slow_stays_slow("sibling_mem"); }
TEST(InProcess, DetourCannotRewriteTheSummary) { expect_slow_stays_slow("detour"); }
TEST(InProcess, HeapScanCannotMoveTheStartMark) { expect_slow_stays_slow("heap_scan"); }
TEST(InProcess, StackScanCannotShrinkTheSamples) { expect_slow_stays_slow("stack_scan"); }
// Correct results computed by a thread during the untimed warm-ups: the work shows in the time (or the results
// are wrong), never correct and fast.
TEST(InProcess, WorkDuringTheWarmupsIsNotFree) { expect_slow_stays_slow("warmup_thread"); }

// Work on a thread of its own while the runner is meant to be frozen, the runner resumed by a SIGCONT timer: the
// monitor sees the continue it did not send and fails the candidate, saying why.
// Where the verdict is `correct` instead, its time must be its work's (expect_slow_stays_slow): on this kernel
// (6.18) the timer's SIGCONTs arrived while the runner ran (~1 a call, the fixture's reports say) and none resumed it
// frozen, so no token was made off the clock. (A count of continues cannot tell more: the ranks' reports interleave.)
TEST(InProcess, ATimerCannotResumeTheRunnerOffTheClock) {
  Eval e = expect_slow_stays_slow("resume_off_clock", "#define PKB_RESUME 0\n");
  if (status(e) == "correct") return;  // and timed at its work, checked above
  EXPECT_EQ(status(e), "runtime_error") << summary(e);
  EXPECT_NE(e.record.value("message", "").find("ran between calls"), std::string::npos) << summary(e);
}
// The same work, resumed by the monitor's own writes to the sealed channel (an inotify watch with O_ASYNC and
// F_SETSIG SIGCONT): the lockdown refuses the watch, so the work is paid inside the calls.
TEST(InProcess, WatchedWritesCannotResumeTheRunner) {
  Eval e = expect_slow_stays_slow("resume_off_clock", "#define PKB_RESUME 1\n");
  EXPECT_EQ(e.logs.find("resume off the clock: armed"), std::string::npos) << e.logs.substr(0, 3000);
}

TEST(InProcess, RecordEditCannotHideSkippedCalls) { expect_skipping_is_not_correct("record_edit", kFastTiming); }
TEST(InProcess, ReturnAddressCannotTellTimedCallsApart) {
  expect_skipping_is_not_correct("return_address", kFastTiming);
}
// Correct outputs, remembered by content: where contents come back (more timed calls than copies), its repeated calls
// are far faster than its fresh ones, and it is scored at its fresh speed (>= the 2 ms it sleeps on new contents),
// with no paper or device speedup claimed.
TEST(InProcess, MemoizingOnContentIsScoredAtItsFreshSpeed) {
  pkb::test::TempDir tmp;
  Eval e = eval(tmp.path(), "memoize_on_content", kRevisitShape);
  ASSERT_EQ(status(e), "correct") << summary(e);
  const json& t = e.record["timing"];
  ASSERT_GT(t["candidate"].value("repeated_content_iters", 0), 0) << "no contents came back: the test proves nothing";
  // Flagged wherever the two kinds' intervals separate; on a machine so loaded that even they overlap (the fresh
  // calls' spread reaching the repeated ones'), the flag is withheld, by the rule, and the time still is the fresh one.
  const json& c = t["candidate"];
  const bool separable = c.value("fresh_ci95_low_us", 0.0) > 1.25 * c.value("repeated_ci95_high_us", 0.0);
  EXPECT_TRUE(t.contains("repeat_faster") || !separable) << t.dump(2).substr(0, 3000);
  EXPECT_GE(t["by_method"]["pkb"].value("candidate_us", 0.0), 0.9 * kSleepUs) << t.dump(2).substr(0, 3000);
  EXPECT_FALSE(t["by_method"]["paper"].contains("speedup")) << t["by_method"].dump(2);
}

TEST(InProcess, FirstVisitOnlyWorkIsCaught) { expect_skipping_is_not_correct("first_visit_only", kRevisitShape); }
// The same where the monitor draws every call's copy in place (GPUs' default) and captures only the checked copies:
// the revisits it skips may still be the kept ones, and memoizing still pays only on repeated contents.
TEST(InProcess, FirstVisitOnlyWorkIsCaughtWhereCopiesAreDrawn) {
  std::vector<std::string> drawn = kRevisitShape;
  drawn.insert(drawn.end(), {"--draw-copies", "on"});
  expect_skipping_is_not_correct("first_visit_only", drawn);
}
TEST(InProcess, MemoizingOnDrawnContentIsScoredAtItsFreshSpeed) {
  pkb::test::TempDir tmp;
  std::vector<std::string> drawn = kRevisitShape;
  drawn.insert(drawn.end(), {"--draw-copies", "on"});
  Eval e = eval(tmp.path(), "memoize_on_content", drawn);
  ASSERT_EQ(status(e), "correct") << summary(e);
  const json& t = e.record["timing"];
  ASSERT_GT(t["candidate"].value("copies_drawn_in_place", 0), 0) << t.dump(2).substr(0, 3000);
  ASSERT_GT(t["candidate"].value("repeated_content_iters", 0), 0) << "no contents came back: the test proves nothing";
  // Flagged wherever the two kinds' intervals separate; on a machine so loaded that even they overlap (the fresh
  // calls' spread reaching the repeated ones'), the flag is withheld, by the rule, and the time still is the fresh one.
  const json& c = t["candidate"];
  const bool separable = c.value("fresh_ci95_low_us", 0.0) > 1.25 * c.value("repeated_ci95_high_us", 0.0);
  EXPECT_TRUE(t.contains("repeat_faster") || !separable) << t.dump(2).substr(0, 3000);
  EXPECT_GE(t["by_method"]["pkb"].value("candidate_us", 0.0), 0.9 * kSleepUs) << t.dump(2).substr(0, 3000);
}

// An honest kernel slowed by a burst of load over its first timed calls (as a CPU hog started mid-timing would) is
// not taken for a memoizer: its calls on fresh and on repeated contents share the burst, so it is not flagged
// repeat_faster, is scored at its median rather than at the burst's speed, and keeps its paper speedup. (Flagged while
// the fresh contents' calls were the first ones timed: a fresh median of 37 ms against 18 ms on repeated contents,
// and scored at the 37.)
const std::vector<std::string> kBurstShape = {
    "--param",       "M=1024", "--param",    "N=1024", "--paper-warmup", "50", "--paper-warmup-budget", "600",
    "--paper-iters", "3",      "--min-reps", "6",      "--max-reps",     "6",  "--timing-budget",       "600"};
constexpr double kBurstUs = 20000;  // tests/fixtures/adversarial/burst_on_first_timed_calls.cpp

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

TEST(InProcess, AnHonestKernelSlowedByABurstIsNotTakenForAMemoizer) {
  pkb::test::TempDir tmp;
  Eval e = eval(tmp.path(), "burst_on_first_timed_calls", kBurstShape);
  ASSERT_EQ(status(e), "correct") << summary(e);
  const json& t = e.record["timing"];
  ASSERT_GT(t["candidate"].value("repeated_content_iters", 0), 0) << "no contents came back: the test proves nothing";
  // The pkb method's calls in order: the first two repetitions' 10 are the burst's.
  const std::vector<double> calls = t["candidate"].value("iter_us", std::vector<double>());
  ASSERT_EQ(calls.size(), 30u) << summary(e);
  const double burst = median_of({calls.begin(), calls.begin() + 10});
  // Each of the burst's calls sleeps kBurstUs more, so none is shorter, however loaded the machine (load only
  // lengthens calls); had the burst missed them, some of those ten would be ordinary calls of a few ms.
  ASSERT_GE(*std::min_element(calls.begin(), calls.begin() + 10), kBurstUs)
      << "the burst missed the timed calls: the test proves nothing\n"
      << summary(e);
  EXPECT_FALSE(t.contains("repeat_faster")) << t.dump(2).substr(0, 3000);
  // Scored by the rule (the median, never below the fresh calls' median), and below the burst's speed: with every fresh
  // call in the burst, the fresh median was the burst's. (Not "within half a burst of the other calls' median": on a
  // loaded machine the calls outside the burst spread over 2-21 ms, and the fresh median, 8th of 15, sat above that.)
  const json& c = t["candidate"];
  const double scored = t["by_method"]["pkb"].value("candidate_us", 0.0);
  EXPECT_DOUBLE_EQ(scored, std::max(c.value("median_us", 0.0), c.value("fresh_median_us", 0.0))) << c.dump(2);
  EXPECT_LT(scored, burst) << t.dump(2).substr(0, 3000);
  // The paper method keeps its time unless the rule found the fresh calls slower than their neighbours even within
  // noise (repeats_note; eval_verdict_test checks the rule on fixed numbers). Idle, the burst's fresh calls sit beside
  // the burst's repeated ones and it keeps its time; on a loaded machine a call's time varies ~10x and the rule may
  // fire on an honest kernel, which costs the paper method its time and the verdict nothing.
  const json& paper = t["by_method"]["paper"];
  if (!t.contains("repeats_note")) {
    EXPECT_TRUE(paper.contains("speedup")) << t["by_method"].dump(2);
  } else {
    EXPECT_GT(c.value("fresh_to_neighbours", 0.0), 1.0) << c.dump(2);  // fired on slower fresh calls, none other
    EXPECT_EQ(paper.value("candidate_us", -1.0), 0.0) << t["by_method"].dump(2);
  }
}

TEST(InProcess, NoScheduleInProc) { expect_skipping_is_not_correct("schedule_from_proc", kRevisitShape); }

}  // namespace
