// time_iterations (worker/timing.h) as stages: a TimedLoop warms up, runs repetitions until the stop rule says
// done, runs the escape probe, then reports (as google/benchmark's runner goes RunBenchmark -> DoNIterations ->
// Report). Every stage is collective over MPI_COMM_WORLD: every rank runs the same stages, and the same collectives
// in the same order, so rank 0's decisions (chunk sizes, stop, the device view's end) reach each rank in step.
#include <algorithm>
#include <chrono>
#include <thread>

#include "core/dispatch_pin.h"
#include "core/error.h"
#include "worker/timing.h"

namespace pkb {
namespace {

class TimedLoop {
 public:
  TimedLoop(Runtime& rt, const CopyPlan& plan, const std::function<void(int)>& run, const TimingOptions& o,
            const TimingHooks* hooks);
  void warm_up();
  void repeat_until_done();
  void escape_probe();
  TimingStats report();

 private:
  // A device-view call takes its ranks' worst kind.
  enum Kind : int { kHeld = 0, kHostBound = 1, kUnheld = 2, kBusy = 3 };

  static double now_us() {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
  static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return quantile_sorted(v, 0.5);
  }
  static void throw_if(const std::string& err, const char* where) {
    if (!err.empty()) throw Error(std::string(where) + ": " + err);
  }
  void before(int copy) {
    if (hooks_ && hooks_->before) hooks_->before(copy);
  }
  void after(int ordinal, int copy) {
    if (hooks_ && hooks_->after_timed) hooks_->after_timed(ordinal, copy);
  }
  bool blocks() const { return hooks_ && hooks_->run_block; }
  // The before_calls hook, its time kept out of the repetitions' budget and loop time.
  void before_calls(int first, int count) {
    if (!hooks_ || !hooks_->before_calls) return;
    const double h0 = now_us();
    hooks_->before_calls(first, count);
    excluded_us_ += now_us() - h0;
  }

  void pkb_warmup();
  void paper_warmup();
  void prepare_timed_calls();
  void pause_and_warm_up_again();
  void run_repetition(int base);
  bool stop_rule();
  void pkb_block(int base);
  void paper_block(int base);
  void device_block(int base);
  void issue_device_calls(int base, std::vector<double>& issue, std::vector<char>& held);
  std::vector<double> device_row(const std::vector<double>& issue, const std::vector<char>& held);
  int tally_device_calls(const std::vector<double>& all, int n);
  DeviceStats device_stats() const;
  void split_fresh_and_repeated();

  Runtime& rt_;
  const CopyPlan& plan_;
  const std::function<void(int)>& run_;
  const TimingOptions& o_;
  const TimingHooks* hooks_;
  const bool root_;
  const bool untrusted_;
  TimingStats s_;
  const DispatchPin pin_;  // warm-up, repetitions and probe launch from one core of their own (core/dispatch_pin.h)
  ClockMonitor clocks_;

  double longest_issue_us_ = 0;  // the host's time to issue one warm-up call: sizes the device view's hold
  std::vector<double> pkb_values_, paper_values_;  // rank 0: across ranks; others: their own
  std::vector<int> pkb_ordinals_;
  int reps_ = 0;
  double t0_ = 0;           // when the repetitions started (host µs)
  double excluded_us_ = 0;  // of the time since, spent in the before_calls hook (not the repetitions')

  // The device view (prepare_timed_calls decides whether it runs and measures).
  bool device_view_ = false;       // it runs on GPUs only: on CPU ranks record() is the host's clock, no queue to hold
  bool device_calls_run_ = false;  // on CPU ranks too, untimed: the same ordinals everywhere
  bool device_on_ = false;         // it measures (until a block holds no call)
  std::string device_off_;         // why the view measures nothing though its calls run
  std::vector<double> device_values_;
  protocol::DeviceCounts device_;  // its calls' counts, the current hold, the largest HoldTrace values (any rank)
};

const char* stop_reason(const TimingOptions& o, int reps, const SampleStats& pkb, const SampleStats& paper) {
  if (reps >= o.min_reps && pkb.ci_half_rel() <= o.ci_target && paper.ci_half_rel() <= o.ci_target) return "ci_target";
  if (reps >= o.max_reps) return "max_reps";
  return "budget";
}

TimedLoop::TimedLoop(Runtime& rt, const CopyPlan& plan, const std::function<void(int)>& run, const TimingOptions& o,
                     const TimingHooks* hooks)
    : rt_(rt),
      plan_(plan),
      run_(run),
      o_(o),
      hooks_(hooks),
      root_(rt.rank() == 0),
      untrusted_(hooks && hooks->untrusted),
      clocks_(rt.device()) {  // a runner's gated view has a device, though no queue of its own to hold
  s_.dispatch_cpu = pin_.cpu();
  s_.dispatch_note = pin_.note();
}

// The pkb method's warm-up (a barrier before each call): at the start, and again after each --rep-gap-ms pause.
void TimedLoop::pkb_warmup() {
  for (int i = 0; i < o_.warmup; ++i) {
    int k = plan_.warmup_copy(i);
    before(k);
    rt_.barrier();
    const double h0 = rt_.host_now_us();
    run_(k);
    longest_issue_us_ = std::max(longest_issue_us_, rt_.host_now_us() - h0);
  }
}

// The paper method's warm-up, back to back in chunks until its count or its budget is spent.
void TimedLoop::paper_warmup() {
  const double w0 = now_us();
  while (true) {
    int chunk = o_.next_paper_warmup_chunk(s_.paper_warmup_calls, (now_us() - w0) / 1e6);
    MPI_Bcast(&chunk, 1, MPI_INT, 0, MPI_COMM_WORLD);  // rank 0's clock decides: one count for all ranks
    if (chunk == 0) break;
    if (blocks()) {
      std::vector<int> copies(chunk);
      for (int i = 0; i < chunk; ++i) copies[i] = plan_.warmup_copy(o_.warmup + s_.paper_warmup_calls + i);
      hooks_->run_block(copies, false);
      s_.paper_warmup_calls += chunk;
    } else {
      for (int i = 0; i < chunk; ++i, ++s_.paper_warmup_calls) {
        int k = plan_.warmup_copy(o_.warmup + s_.paper_warmup_calls);
        before(k);
        run_(k);
      }
    }
    throw_if(rt_.synchronize(), "warm-up");
  }
}

// Warm-up: the pkb method's, then the paper method's, back to back.
void TimedLoop::warm_up() {
  pkb_warmup();
  paper_warmup();
  throw_if(rt_.synchronize(), "warm-up");
  MPI_Barrier(MPI_COMM_WORLD);
  prepare_timed_calls();
}

// The timers for the largest block, and whether the device view measures, with its first hold.
void TimedLoop::prepare_timed_calls() {
  device_view_ = rt_.is_cuda() && o_.device_iters > 0;
  device_calls_run_ = o_.device_iters > 0;
  rt_.timers_reserve(2 * std::max({o_.iters, o_.paper_iters, device_view_ ? o_.device_iters : 0}));
  device_.hold_us = initial_hold_us(longest_issue_us_);
  if (untrusted_ && device_view_ && rt_.world() > 1)
    device_off_ = "candidates have no device view at W > 1: a copy engine could fetch peers' inputs during the hold";
  else if (untrusted_ && device_view_ && !rt_.hold_fills_device())
    device_off_ = "the hold cannot take every SM's thread slots on this GPU, so other work could run beside it";
  device_on_ = device_view_ && device_off_.empty();
}

void TimedLoop::pkb_block(int base) {
  for (int i = 0; i < o_.iters; ++i) {
    int k = plan_.timed_copy(base + i);
    before(k);
    rt_.barrier();
    rt_.record(2 * i);
    run_(k);
    rt_.record(2 * i + 1);
    after(base + i, k);
  }
  throw_if(rt_.synchronize(), "timed loop (pkb method)");
  std::vector<double> mine(o_.iters), all(static_cast<size_t>(o_.iters) * rt_.world());
  for (int i = 0; i < o_.iters; ++i) mine[i] = 1e3 * rt_.elapsed_ms(2 * i, 2 * i + 1);
  MPI_Gather(mine.data(), o_.iters, MPI_DOUBLE, all.data(), o_.iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  for (int i = 0; i < o_.iters; ++i) {
    double slowest = mine[i];
    for (int q = 0; root_ && q < rt_.world(); ++q)
      slowest = std::max(slowest, all[static_cast<size_t>(q) * o_.iters + i]);
    pkb_values_.push_back(slowest);
    pkb_ordinals_.push_back(base + i);
  }
}

void TimedLoop::paper_block(int base) {
  MPI_Barrier(MPI_COMM_WORLD);
  rt_.barrier();   // every rank starts its back-to-back calls together, then no barrier until the end
  if (blocks()) {  // a GPU runner: wakes of many calls, each call's window its own (TimingHooks::run_block)
    std::vector<int> copies(o_.paper_iters);
    for (int i = 0; i < o_.paper_iters; ++i) copies[i] = plan_.timed_copy(base + i);
    hooks_->run_block(copies, true);
    for (int i = 0; i < o_.paper_iters; ++i) after(base + i, copies[i]);
  } else {
    for (int i = 0; i < o_.paper_iters; ++i) {
      int k = plan_.timed_copy(base + i);
      before(k);
      rt_.record(2 * i);
      run_(k);
      rt_.record(2 * i + 1);
      after(base + i, k);
    }
  }
  throw_if(rt_.synchronize(), "timed loop (paper method)");
  double sum = 0;
  for (int i = 0; i < o_.paper_iters; ++i) sum += 1e3 * rt_.elapsed_ms(2 * i, 2 * i + 1);
  double mean = sum / o_.paper_iters, worst = mean;
  MPI_Reduce(&mean, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  paper_values_.push_back(root_ ? worst : mean);
}

// The device view: every call behind a hold, the GPU's start checked to come after the host issued the call.
// Every rank makes every call (they hold collectives); a call counts when it was held on every rank, its time
// the slowest rank's. The device barrier after the hold starts the ranks together whatever their holds. The
// outputs are poisoned after the hold, so nothing a candidate wrote during it survives into the window.
// issue[i]: the host's time to issue call i; held[i]: the GPU had not reached its start by then.
void TimedLoop::issue_device_calls(int base, std::vector<double>& issue, std::vector<char>& held) {
  const int n = o_.device_iters;
  if (device_on_) rt_.hold_slots_reserve(n);
  for (int i = 0; i < n; ++i) {
    const int ordinal = base + i, k = plan_.timed_copy(ordinal);
    ++device_.calls;
    if (device_on_) rt_.hold(device_.hold_us, i);
    before(k);
    rt_.barrier();
    if (device_on_) rt_.record(2 * i);
    const double h0 = rt_.host_now_us();
    run_(k);
    issue[i] = rt_.host_now_us() - h0;
    if (device_on_) {
      held[i] = !rt_.reached(2 * i);
      rt_.record(2 * i + 1);
      if (!held[i] || 2 * issue[i] > device_.hold_us)
        device_.hold_us = next_hold_us(device_.hold_us, issue[i]);
      else if (untrusted_)
        // A candidate's hold follows its own last issue down as well as up: one that issued its warm-ups slowly
        // to be given a long hold gets it once, not for every call, so the work it could start beside a hold
        // (host threads, copy engines) is bounded by what it spends issuing, which its time never falls below.
        device_.hold_us = initial_hold_us(issue[i]);
    }
    after(ordinal, k);
  }
  throw_if(rt_.synchronize(), "timed loop (device view)");
}

// This rank's row for rank 0, as n + n + 2 doubles: per call its time (for candidates never below the issue) and
// its Kind, then the largest start spread and gap this rank's holds saw.
std::vector<double> TimedLoop::device_row(const std::vector<double>& issue, const std::vector<char>& held) {
  const int n = o_.device_iters;
  std::vector<double> mine(n, 0);
  std::vector<int> kind(n, kUnheld);
  std::vector<Runtime::HoldTrace> traces = rt_.hold_traces(n);
  double traced[2] = {0, 0};
  for (int i = 0; i < n; ++i) {
    traced[0] = std::max(traced[0], traces[i].start_spread_us);
    traced[1] = std::max(traced[1], traces[i].longest_gap_us);
    if (traces[i].start_spread_us > kHoldBusySpreadUs || traces[i].longest_gap_us > kHoldBusyGapUs) {
      kind[i] = kBusy;
    } else if (held[i]) {
      const double window = 1e3 * rt_.elapsed_ms(2 * i, 2 * i + 1);
      kind[i] = untrusted_ && issue[i] > window ? kHostBound : kHeld;
      mine[i] = kind[i] == kHostBound ? issue[i] : window;
    }
  }
  std::vector<double> row(mine);
  row.insert(row.end(), kind.begin(), kind.end());
  row.insert(row.end(), traced, traced + 2);
  return row;
}

// Rank 0: each call's worst kind and slowest time over the ranks' rows; returns the calls held on every rank.
int TimedLoop::tally_device_calls(const std::vector<double>& all, int n) {
  const size_t row = 2 * static_cast<size_t>(n) + 2;
  for (int q = 0; q < rt_.world(); ++q) {
    device_.max_start_spread_us = std::max(device_.max_start_spread_us, all[q * row + 2 * n]);
    device_.max_gap_us = std::max(device_.max_gap_us, all[q * row + 2 * n + 1]);
  }
  int held_calls = 0;
  for (int i = 0; i < n; ++i) {
    double slowest = 0;
    int worst_kind = kHeld;
    for (int q = 0; q < rt_.world(); ++q) {
      worst_kind = std::max(worst_kind, static_cast<int>(all[q * row + n + i]));
      slowest = std::max(slowest, all[q * row + i]);
    }
    if (worst_kind == kBusy) {
      ++device_.busy;
    } else if (worst_kind == kUnheld) {
      ++device_.unheld;
    } else {
      device_.host_bound += worst_kind == kHostBound;
      device_values_.push_back(slowest);
      ++held_calls;
    }
  }
  return held_calls;
}

void TimedLoop::device_block(int base) {
  const int n = o_.device_iters;
  std::vector<double> issue(n, 0);
  std::vector<char> held(n, 0);
  issue_device_calls(base, issue, held);
  if (!device_on_) return;
  std::vector<double> sent = device_row(issue, held);  // one gather for every rank's row
  const int row = static_cast<int>(sent.size());
  std::vector<double> all(static_cast<size_t>(row) * rt_.world());
  MPI_Gather(sent.data(), row, MPI_DOUBLE, all.data(), row, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int held_calls = root_ ? tally_device_calls(all, n) : 0;
  // A block without one held call (a call that waits on the GPU from the host, at the longest hold): no later
  // block will do better, so the view stops here (rank 0 decides for every rank: the calls hold collectives).
  // Its calls still run in later repetitions, untimed, like every other ordinal.
  int stop = root_ && held_calls == 0;
  MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (stop) device_on_ = false;
}

void TimedLoop::pause_and_warm_up_again() {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o_.rep_gap_ms));
  pkb_warmup();
  throw_if(rt_.synchronize(), "warm-up after the pause");
  MPI_Barrier(MPI_COMM_WORLD);
}

// One repetition: the host probes and clocks around one block of each method.
void TimedLoop::run_repetition(int base) {
  wake_host_core(kProbeWakeUs);
  double probe = host_probe_us(), chase = host_chase_probe_us();
  if (root_) s_.host_probe_us.push_back(probe), s_.host_chase_probe_us.push_back(chase);
  clocks_.sample(reps_, "before");
  // Alternating which method goes first cancels drift and order effects between the two.
  if (reps_ % 2 == 0)
    pkb_block(base), paper_block(base + o_.iters);
  else
    paper_block(base + o_.iters), pkb_block(base);
  // The device view after both (it changes neither method's measurement); its calls run even where it measures
  // nothing, so that every repetition makes the same calls on the same copies.
  if (device_calls_run_) device_block(base + o_.iters + o_.paper_iters);
  clocks_.sample(reps_, "after");
}

// Rank 0 applies the stop rule (repetitions_done) and tells every rank.
bool TimedLoop::stop_rule() {
  double elapsed_s = (now_us() - t0_ - excluded_us_) / 1e6;
  SampleStats a = summarize(pkb_values_), b = summarize(paper_values_);
  int done = root_ && repetitions_done(o_, reps_, a, b, elapsed_s);
  if (root_ && done) s_.stopped_by = stop_reason(o_, reps_, a, b);
  MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return done != 0;
}

void TimedLoop::repeat_until_done() {
  t0_ = now_us();
  for (bool done = false; !done;) {
    int base = reps_ * o_.calls_per_rep();
    before_calls(base, o_.calls_per_rep());
    if (reps_ > 0 && o_.rep_gap_ms > 0) pause_and_warm_up_again();
    run_repetition(base);
    ++reps_;
    done = stop_rule();
  }
  s_.reps = reps_;
  s_.host_loop_us = now_us() - t0_ - excluded_us_;
}

// Escape probe: a stream whose events see a fraction of the time a device-wide synchronize waits for means
// work was launched elsewhere and never joined back. An honest call's synchronize returns after its events
// plus fixed host costs (the launch, waking the host thread; tens of µs, more when MPS or a busy node delays
// the wake-up), and both clocks jitter in proportion to the call: 2x absorbs the proportional part and
// +100 µs the fixed part, so only work that runs at least as long as the call itself, beyond 100 µs, escapes
// detection-free. The probe's calls take fresh copies after the last repetition's.
void TimedLoop::escape_probe() {
  before_calls(reps_ * o_.calls_per_rep(), kEscapeProbeCalls);
  std::vector<double> ev, dev;
  for (int i = 0; i < kEscapeProbeCalls; ++i) {
    int k = plan_.timed_copy(reps_ * o_.calls_per_rep() + i);
    before(k);
    MPI_Barrier(MPI_COMM_WORLD);
    rt_.barrier();
    throw_if(rt_.stream_synchronize(), "escape probe");
    double h0 = now_us();
    rt_.record(0);
    run_(k);
    rt_.record(1);
    throw_if(rt_.synchronize(), "escape probe");
    dev.push_back(now_us() - h0);
    ev.push_back(1e3 * rt_.elapsed_ms(0, 1));
  }
  s_.escape_event_us = median(ev);
  s_.escape_device_us = median(dev);
  constexpr double kEscapeRatio = 2, kEscapeSlackUs = 100;  // the proportional and the fixed part (above)
  bool escaped = rt_.is_cuda() && s_.escape_device_us > kEscapeRatio * s_.escape_event_us + kEscapeSlackUs;
  int flags[2] = {escaped, clocks_.throttled()}, any[2] = {0, 0};
  MPI_Allreduce(flags, any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  s_.stream_escape = any[0] != 0;
  s_.throttled = any[1] != 0;
  s_.clocks = clocks_.to_json();
}

DeviceStats TimedLoop::device_stats() const {
  DeviceStats d;
  d.method = {summarize(device_values_), device_values_};
  static_cast<protocol::DeviceCounts&>(d) = device_;
  if (!device_off_.empty())
    d.note = device_off_;
  else if (device_values_.empty() && device_.busy > 0)
    d.note = "every hold found the GPU running work the harness had not enqueued (" + std::to_string(device_.busy) +
             " calls): work outside the stream";
  else if (device_values_.empty())
    d.note = "no call was held on every rank: the GPU started each before the host had issued it (at a " +
             std::to_string(static_cast<int>(device_.hold_us)) +
             " us hold), so the call waits on the GPU from the host inside";
  return d;
}

// Calls that saw input contents seen before (only when memory did not allow one copy per call): a kernel that
// memoizes on content is much faster on those. Both kinds' statistics are recorded so that it shows; the plan
// interleaves the two kinds through the timing, so load that comes and goes stretches both alike.
void TimedLoop::split_fresh_and_repeated() {
  std::vector<double> fresh, repeated;
  std::vector<bool> is_fresh;
  for (size_t i = 0; i < pkb_values_.size(); ++i) {
    is_fresh.push_back(plan_.fresh_call(pkb_ordinals_[i]));
    (is_fresh.back() ? fresh : repeated).push_back(pkb_values_[i]);
  }
  s_.repeated_content_iters = static_cast<int>(repeated.size());
  if (!repeated.empty() && !fresh.empty()) {
    s_.fresh = summarize(fresh);
    s_.repeated = summarize(repeated);
    s_.fresh_to_neighbours = fresh_to_neighbours(pkb_values_, is_fresh);
  }
}

TimingStats TimedLoop::report() {
  s_.pkb = {summarize(pkb_values_), pkb_values_};
  s_.paper = {summarize(paper_values_), paper_values_};
  if (device_view_) s_.device = device_stats();
  split_fresh_and_repeated();
  return s_;
}

}  // namespace

TimingStats time_iterations(Runtime& rt, const CopyPlan& plan, const std::function<void(int)>& run,
                            const TimingOptions& o, const TimingHooks* hooks) {
  TimedLoop loop(rt, plan, run, o, hooks);
  loop.warm_up();
  loop.repeat_until_done();
  loop.escape_probe();
  return loop.report();
}

}  // namespace pkb
