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

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/timing_method.h"
#include "protocol/rank_record.h"
#include "runtime/runtime.h"
#include "worker/clocks.h"
#include "worker/copy_plan.h"
#include "worker/host_probes.h"
#include "worker/sample_stats.h"
#include "worker/timing_options.h"

namespace pkb {

struct MethodStats {
  SampleStats stats;              // pkb: over every slowest-rank call; paper: over the repetition values
  std::vector<double> values_us;  // pkb: per call (slowest rank); paper: per repetition (max over ranks of means)
};

// The device view's calls that counted (their counts are the record's, protocol::DeviceCounts), and why the others
// did not: calls made (every rank); unheld, calls some rank's GPU started before its host had issued them; busy, calls
// whose hold found the GPU running other work (Runtime::HoldTrace beyond the limits); host_bound (candidates), calls
// whose time is the host's issue time, which exceeded the events' window; hold_us, the hold at the end (it grows when a
// call was unheld); the largest HoldTrace values seen (any rank).
struct DeviceStats : protocol::DeviceCounts {
  MethodStats method;  // per call (slowest rank), only calls held on every rank
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
  // The median over fresh calls of each one's time over the mean of the repeated calls beside it (the nearest before
  // and after, in call order; 0: not both kinds). Neighbours ran under the same load, so a burst that stretches a
  // stretch of calls cancels out, while a memoizer's every fresh call is slower than the repeats beside it.
  double fresh_to_neighbours = 0;
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

// The device view's first hold: twice the longest time the host took to issue a warm-up call, plus a margin for
// the barrier and event launches; and the hold after an unheld call that took the host `issue_us` to issue.
double initial_hold_us(double longest_issue_us);
double next_hold_us(double hold_us, double issue_us);
constexpr double kMaxHoldUs = 5000;  // a call that waits on the GPU inside is unheld at any hold: stop growing

// Runs run(copy) for the warm-ups, the repetitions and the probe. Collective over MPI_COMM_WORLD: every rank
// calls it; rank 0's result holds the cross-rank statistics (others hold their own calls).
TimingStats time_iterations(Runtime& rt, const CopyPlan& plan, const std::function<void(int)>& run,
                            const TimingOptions& o, const TimingHooks* hooks = nullptr);

}  // namespace pkb
