// The timed loop, the same for references and candidates. Two methods are measured in every
// timing, in interleaved repetitions (docs/design/timing.md):
//   pkb    a cross-rank barrier (untimed) before every call, per-call events, the slowest rank per call, the
//          median over every repetition's calls. One call's latency, host dispatch included.
//   paper  ParallelKernelBench's protocol: 500 warm-up calls, then calls back to back without barriers, per-call
//          events, the per-rank mean of a repetition's calls, the maximum over ranks; the median over
//          repetitions. Back-to-back launching hides host dispatch behind the previous call. In a GPU runner each
//          warm-up chunk and each timed block goes in wakes of many calls of the runner (TimingHooks::run_block): no
//          host between the calls of a wake, each call's window its own event pair as in process.
// Repetitions continue until both medians' 95% confidence intervals are within a target, a time budget is
// spent, or a maximum is reached. Inputs rotate over copies (so the L2 never holds a call's inputs from an
// earlier call), GPU clocks and throttle reasons are sampled around every repetition, and an escape probe
// checks for work that leaves the stream.
// A third view, `device`, is measured for references only (TimingOptions::device_iters; the candidate pass turns it
// off): each call enqueued behind a hold on the stream (Runtime::hold) long enough that the host has issued the
// whole call before the GPU starts it, so the events see the GPU's own time for the call, without host dispatch.
// On a shared host whose dispatch speed varies (docs/results/h200_1-2026-12-03-d.md: ~1.5x in steps of seconds) it is
// the number that stays put. A call whose start the GPU had reached before the host finished issuing it (the hold
// was too short, or the call waits on the host for the GPU) does not count; the hold then grows.
// Known limit: the paper method rotates every input (PKB rotates only the first tensor), because no candidate
// call may see input contents an earlier call saw; our `paper` times are therefore never more cache-friendly.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/device_kind.h"
#include "core/timing_method.h"
#include "protocol/rank_record.h"
#include "runtime/runtime.h"
#include "spec/problem_spec.h"

namespace pkb {

// pkb and paper are measured for every timing; device where the device view measured (TimingStats::device).

struct TimingOptions {
  int warmup = 10;         // pkb method: untimed calls (a barrier before each)
  int iters = 50;          // pkb method: timed calls per repetition
  int paper_warmup = 500;  // paper method: untimed back-to-back calls
  int paper_iters = 100;   // paper method: back-to-back timed calls per repetition
  int min_reps = 3, max_reps = 5;
  double ci_target = 0.01;  // stop once both medians' 95% CI half-widths are within this fraction of the median
  double budget_s = 2;      // ... or once the repetitions took this long (host seconds on rank 0)
  // The paper method's warm-up stops early once it ran this many seconds (500 calls of a 20 ms problem would
  // take 10 s and warm nothing more than 1 s does).
  double paper_warmup_budget_s = 1;
  int repeats = 1;  // baselines only (validate --time): whole timings in a row, for the medians' spread
  // An untimed pause before every repetition after the first (then `warmup` untimed calls again), so that a
  // timing's repetitions sample the node over a longer window: a host or GPU state that lasts tens of ms
  // otherwise sets a whole timing's median (docs/design/timing.md).
  double rep_gap_ms = 0;
  // device view: timed calls per repetition, each behind a hold (0: off). Ordinals and input copies like the other
  // methods' calls (after the paper block's), so its calls are checked alike; on CPU ranks the driver sets it to 0
  // (for_device), since there is no queue to hold.
  int device_iters = 50;

  int calls_per_rep() const { return iters + paper_iters + device_iters; }
  // These options for a run on `device`: the device view is off on CPU ranks.
  TimingOptions for_device(DeviceKind device) const {
    TimingOptions t = *this;
    if (device != DeviceKind::cuda) t.device_iters = 0;
    return t;
  }
  // The paper warm-up runs in chunks, each synchronized and timed: the next chunk's size after `done` calls took
  // `elapsed_s` seconds; 0 once paper_warmup ran or the budget is spent (a chunk that started always finishes,
  // so a cold first call cannot cut it alone). Rank 0 decides for every rank: the calls hold collectives.
  static constexpr int kPaperWarmupChunk = 50;
  int next_paper_warmup_chunk(int done, double elapsed_s) const;
  int warmup_calls() const { return warmup + paper_warmup; }
  int max_timed_calls() const { return max_reps * calls_per_rep(); }
  // Throws pkb::Error naming the option that is out of range.
  void validate() const;
  nlohmann::json to_json() const;
  std::vector<std::string> to_args() const;  // pkb-rank's and run_reference.py's flags for these options
};

// Summary of a sample of times (µs): median and IQR, and the median's 95% confidence interval from order
// statistics (distribution-free; below 6 values it is [min, max]).
struct SampleStats {
  int n = 0;
  double median = 0, q25 = 0, q75 = 0, mean = 0, min = 0, max = 0, stddev = 0, cv = 0, ci_low = 0, ci_high = 0;
  double ci_half_rel() const { return median > 0 ? (ci_high - ci_low) / (2 * median) : 0; }
};
SampleStats summarize(std::vector<double> v);
// Quantile q in [0, 1] of sorted values, linear between order statistics.
double quantile_sorted(const std::vector<double>& sorted, double q);
// 1-based ranks (lo, hi) of the order statistics bounding the median's 95% interval among n values.
std::pair<int, int> median_ci_ranks(int n);

// The stop rule after `reps` repetitions: done when at least min_reps ran and both medians' CIs are within
// the target, or the budget is spent (at least one repetition), or max_reps ran.
bool repetitions_done(const TimingOptions& o, int reps, const SampleStats& pkb, const SampleStats& paper,
                      double elapsed_s);

// GPU clocks and throttle reasons around timed blocks (NVML, loaded at run time; "unavailable" without it).
class ClockMonitor {
 public:
  explicit ClockMonitor(int cuda_device);  // -1: CPU ranks, always unavailable
  ~ClockMonitor();
  void sample(int rep, const char* when);
  bool throttled() const { return throttled_; }
  nlohmann::json to_json() const;

 private:
  struct Impl;
  Impl* impl_ = nullptr;
  std::string note_;
  nlohmann::json samples_ = nlohmann::json::array();
  bool throttled_ = false;
  unsigned long long reasons_seen_ = 0;
};
// Names of the throttle-reason bits that count as throttling (power cap, thermal, hardware slowdown).
std::vector<std::string> throttle_reason_names(unsigned long long reasons);
constexpr unsigned long long kThrottleMask = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

struct MethodStats {
  SampleStats stats;              // pkb: over every slowest-rank call; paper: over the repetition values
  std::vector<double> values_us;  // pkb: per call (slowest rank); paper: per repetition (max over ranks of means)
};

// The device view's calls that counted, and why the others did not.
struct DeviceStats {
  MethodStats method;  // per call (slowest rank), only calls held on every rank
  int calls = 0;       // calls made (every rank)
  int unheld = 0;      // calls some rank's GPU started before its host had issued them
  int busy = 0;        // calls whose hold found the GPU running other work (Runtime::HoldTrace beyond the limits)
  int host_bound = 0;  // candidates: calls whose time is the host's issue time, which exceeded the events' window
  double hold_us = 0;  // the hold at the end (it grows when a call was unheld)
  double max_start_spread_us = 0, max_gap_us = 0;  // the largest HoldTrace values seen (any rank)
  bool measured() const { return method.stats.n > 0; }
  std::string note;  // why nothing was measured, when so
};

struct TimingStats {
  MethodStats pkb, paper;
  DeviceStats device;              // calls == 0: not measured (CPU ranks, candidates, device_iters = 0)
  int reps = 0;                    // repetitions run (each one pkb block and one paper block)
  int paper_warmup_calls = 0;      // paper warm-up calls run (TimingOptions::next_paper_warmup_chunk)
  std::string stopped_by;          // "ci_target", "budget" or "max_reps"
  double host_loop_us = 0;         // wall time of the repetitions on this rank, barriers included
  double escape_event_us = 0;      // median stream-event time in the escape probe
  double escape_device_us = 0;     // median time until a device-wide synchronize returned
  bool stream_escape = false;      // device-wide work far exceeded what the stream's events saw
  int repeated_content_iters = 0;  // timed calls whose input contents an earlier call had
  // The pkb method's calls on fresh and on repeated contents, when both exist (CopyPlan::fresh_call): their medians
  // and the medians' 95% intervals, from which the driver judges memoizing (eval/evaluate.h repeat_faster).
  SampleStats fresh, repeated;
  nlohmann::json clocks;   // ClockMonitor::to_json()
  bool throttled = false;  // any rank saw a throttle reason during a repetition
  // Rank 0's host-speed probe before every repetition (host_probe_us()): a node whose CPU slows down between
  // repetitions shows here, beside the GPU's clocks.
  std::vector<double> host_probe_us;
  // Rank 0's cache-and-branch probe before every repetition (host_chase_probe_us()), beside it: dispatch-like code
  // (an interpreter, a launch path) slows with a contended core while the multiply chain does not.
  std::vector<double> host_chase_probe_us;
  int dispatch_cpu = -1;  // the CPU this rank's calls were launched from (-1: not pinned, dispatch_note says why)
  std::string dispatch_note;

  // The record's timing section (protocol/rank_record.h): the pkb method's fields at the top level (median_us, ...,
  // iter_us, as records always had them), the paper method's under "paper", and the repetitions, clocks and probes.
  protocol::RankTiming to_record() const;
  nlohmann::json to_json() const;  // to_record() as JSON
};

// Untimed work around each call, for candidates: `before` runs before every call (warm-up, timed, probe), ahead
// of the barrier and the start event (poisoning the outputs); `after_timed` after a timed call's end event
// (capturing its outputs), with the call's timed ordinal. Neither is inside the events' window.
struct TimingHooks {
  std::function<void(int copy)> before;
  std::function<void(int ordinal, int copy)> after_timed;
  // Before the timed calls of ordinals [first, first + count) begin (each repetition, then the escape probe), outside
  // every window and outside the repetitions' time budget: where a candidate pass makes those calls' input copies,
  // so that none exists before its repetition and none is made for a repetition that never runs.
  std::function<void(int first, int count)> before_calls;
  // GPU runners (the call gate): the paper method's back-to-back calls in wakes of many calls of the candidate's
  // process (runner::kRunBlock): the timed block and each warm-up chunk is one run_block over its calls' copies, in
  // place of before() and run() for each. When `timed`, call i's window is timers (2i, 2i + 1), as paper_block
  // records them for run(). after_timed still follows for each timed call, once the block returned. Unset: every
  // call is made on its own (in process, CPU ranks, baselines).
  std::function<void(const std::vector<int>& copies, bool timed)> run_block;
  // Candidates: the device view measures only when the hold fills the GPU and the job has one rank (no peer's inputs
  // a copy engine could fetch during the hold), and a call's time is never less than the host took to issue it, so
  // work moved to the host counts (docs/design/timing.md, "The device view"). Otherwise its calls run untimed.
  bool untrusted = false;
};

// A hold whose blocks started further apart than kHoldBusySpreadUs found an SM still running work the harness did
// not enqueue; one whose blocks went longer than kHoldBusyGapUs between two reads of the GPU's timer was switched
// out for another context. Measured on an idle H200 (docs/results/h200_1-2026-12-04.md): spreads 0.29-0.35 µs,
// while the stream-escape fixture's leftover kernels spread a hold by 20.5 µs; and every hold's longest gap was
// 33.3-33.4 µs (the GPU pauses every running warp about that long, at intervals, on its own), so the gap limit sits
// well above that and below a time slice (milliseconds).
constexpr double kHoldBusySpreadUs = 5, kHoldBusyGapUs = 200;

// Keeps this thread's core busy for `us` before the host probes: a core that idled (a repetition whose input copies
// the GPU drew while the host waited) runs them at a lower clock than one that just made copies, and on the H200's
// host that difference alone read as host drift (1.8x) and re-timed the baselines of every evaluation.
void wake_host_core(double us);
constexpr double kProbeWakeUs = 2000;

// Microseconds this thread takes for a fixed chain of dependent integer operations (~30 µs on a 3 GHz core):
// the host's speed as the dispatching thread sees it, sampled before every repetition.
double host_probe_us();

// Microseconds this thread takes for a fixed walk of dependent loads through one random cycle of an L2-sized table
// (1 MiB, brought into the cache first, untimed), branching on each loaded value: the host's speed for branchy,
// cache-bound code, which an SMT sibling or a tenant sharing the core's caches slows (~10x the multiply chain's
// time). Sampled before every repetition beside host_probe_us().
double host_chase_probe_us();

// A single cycle through 0..n-1 (Sattolo's shuffle, seeded): following it from any entry visits all n entries
// before returning. The chase probe's table; exposed for its test.
std::vector<uint32_t> single_cycle_permutation(uint32_t n, uint32_t seed);

// Escape-probe calls after the repetitions.
constexpr int kEscapeProbeCalls = 5;

// Which input copy each call uses. Warm-up calls cycle over copies [0, warmup_copies); timed calls (ordinal j:
// repetition j / calls_per_rep; within it the pkb block's calls, the paper block's, the device view's) and probe calls
// use the copies after those: copy warmup_copies + j where there is one per ordinal (fresh = copies - warmup_copies
// >= calls()). Where memory holds fewer, each fresh copy serves one call, and the calls on fresh copies are spread
// evenly over the pkb blocks' ordinals first (the method that compares fresh calls with repeated ones and scores the
// fresh median, timing.repeat_faster), the copies left over evenly over the other ordinals; every other ordinal
// revisits a warm-up copy (j mod warmup_copies: contents the warm-ups met, kept out of L2 by their rotation). So calls
// on fresh and on repeated contents alternate through the whole timing and a burst of load hits both alike: while the
// fresh copies went to the first ordinals, a burst over the first repetition read as memoizing on honest kernels.
// When every copy is a warm-up copy (references: plain rotation) timed calls cycle over all of them; a plan without a
// layout (reps 0) cycles over its fresh copies.
struct CopyPlan {
  int copies = 1, warmup_copies = 1;
  // The timed ordinals' layout (copy_plan sets it from the timing options): `reps` repetitions (max_reps) of per_rep
  // ordinals whose first pkb_per_rep are the pkb block's, then the escape probe's kEscapeProbeCalls.
  int reps = 0, per_rep = 0, pkb_per_rep = 0;
  int calls() const { return reps > 0 ? reps * per_rep + kEscapeProbeCalls : 0; }
  int warmup_copy(int i) const { return i % warmup_copies; }
  int timed_copy(int j) const { return use(j).copy; }
  // Whether timed ordinal j is the only call of its copy: contents no other call met (warm-ups included).
  bool fresh_call(int j) const { return use(j).fresh; }
  // The first repetition whose timed calls use copy k (-1: none within max_reps).
  int first_rep_of(int copy, const TimingOptions& o) const;
  // The copy a reference-pass draw names: draw i checks repetition i (i < max_reps), later draws repetition 0,
  // which always runs; within it, call (draw % calls_per_rep).
  int checked_copy(int i, uint64_t draw, const TimingOptions& o) const;

 private:
  struct Use {
    bool fresh;
    int copy;
  };
  Use use(int j) const;
};
// Which call of each copy is its capture, the one the driver checks: every call of a captured copy that runs replaces
// the kept one with probability 1/visits (a reservoir of one), so each of a copy's calls is equally likely to be the
// checked one, wherever it sits (a revisit, any position of a back-to-back block). Drawn by the monitor alone, before
// the call's readback is enqueued; a call's draw depends on nothing the candidate sees.
class CaptureDraw {
 public:
  CaptureDraw() = default;
  CaptureDraw(int copies, uint64_t seed) : visits_(copies, 0), draw_(seed) {}
  // One more call of `copy` ran (or is about to): whether it is now the kept one. A copy that is not captured is
  // never kept, nor counted.
  bool keep(int copy, bool captured) { return captured && draw_() % static_cast<uint64_t>(++visits_.at(copy)) == 0; }
  int visits(int copy) const { return visits_.at(copy); }  // calls of a captured copy so far

 private:
  std::vector<int> visits_;
  std::mt19937_64 draw_;
};

// A plan of `copies` with the first `warmup_copies` the warm-up rotation, laid out for timing options o.
CopyPlan copy_plan(int copies, int warmup_copies, const TimingOptions& o);

// Runs run(copy) for the warm-ups, the repetitions and the probe. Collective over MPI_COMM_WORLD: every rank
// calls it; rank 0's result holds the cross-rank statistics (others hold their own calls).
TimingStats time_iterations(Runtime& rt, const CopyPlan& plan, const std::function<void(int)>& run,
                            const TimingOptions& o, const TimingHooks* hooks = nullptr);

// Memory per rank that timing copies may take (their inputs; captures of outputs come on top).
// (3 GiB on GPUs: a 2 MiB input's 1346 copies, one per timed and probe call, fit; 2 GiB did before the device
// view's calls took copies of their own.)
constexpr size_t kTimingCopyBudgetCuda = size_t{3} << 30;
// Memory per rank a baseline's rotation may take on GPUs (run_reference.py's rotation_copies uses the same).
constexpr size_t kRotationBudgetCuda = size_t{2} << 30;
constexpr size_t kTimingCopyBudgetCpu = size_t{32} << 20;

// Copies of `input_bytes` that together exceed 3x the L2 cache (at least 1), within `budget_bytes` and no more than
// `calls`, the calls that rotate over them: the rotation that keeps a call's inputs out of L2. A copy past the
// last call would never be used (4 KiB inputs want 46081 copies; a default timing makes 1510 calls).
// harness/python/rotation.py is the same rule for run_reference.py (a unit test holds the two together).
int rotation_copies(size_t input_bytes, size_t l2_bytes, size_t budget_bytes, size_t calls);
// The calls of one timing that rotate over its copies: the warm-ups and max_reps repetitions of every method.
inline size_t rotation_calls(const TimingOptions& o) {
  return static_cast<size_t>(o.warmup_calls()) + static_cast<size_t>(o.max_timed_calls());
}
// The device view's first hold: twice the longest time the host took to issue a warm-up call, plus a margin for
// the barrier and event launches; and the hold after an unheld call that took the host `issue_us` to issue.
double initial_hold_us(double longest_issue_us);
double next_hold_us(double hold_us, double issue_us);
constexpr double kMaxHoldUs = 5000;  // a call that waits on the GPU inside is unheld at any hold: stop growing

// Copies for timing a candidate: the L2 rotation for the warm-ups, then one fresh copy per timed and probe
// call of the largest plan (so memoizing on content never pays), within a memory budget per rank.
CopyPlan timing_copies(size_t input_bytes, size_t l2_bytes, const TimingOptions& o, size_t budget_bytes);

// Bytes one copy of a rank's inputs (or outputs) takes in the symmetric heap: every tensor at its largest shape over
// the ranks, aligned. The same on every rank, unlike the rank's own tensors (scatter's root holds W slices).
size_t heap_copy_bytes(const ProblemSpec& spec, const RunShape& run, bool inputs);

// The candidate timing plan of an evaluation, one for the whole world: the reference pass draws its checked copies
// from it and the candidate pass rotates over it, so both must size it from the same bytes on every rank.
CopyPlan world_timing_copies(const ProblemSpec& spec, const RunShape& run, bool cuda, const TimingOptions& o);

}  // namespace pkb
