#include "worker/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <thread>

#include "core/dispatch_pin.h"
#include "core/error.h"

namespace pkb {
namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

void throw_if(const std::string& err, const char* where) {
  if (!err.empty()) throw Error(std::string(where) + ": " + err);
}

nlohmann::json stats_json(const SampleStats& s) {
  return {{"median_us", s.median},   {"mean_us", s.mean},         {"min_us", s.min},
          {"max_us", s.max},         {"stddev_us", s.stddev},     {"cv", s.cv},
          {"q25_us", s.q25},         {"q75_us", s.q75},           {"iqr_us", s.q75 - s.q25},
          {"ci95_low_us", s.ci_low}, {"ci95_high_us", s.ci_high}, {"ci95_half_rel", s.ci_half_rel()}};
}

}  // namespace

void TimingOptions::validate() const {
  auto need = [](bool ok, const std::string& why) {
    if (!ok) throw Error("timing options: " + why);
  };
  need(warmup >= 0 && paper_warmup >= 0, "warm-up counts must be >= 0");
  need(iters >= 1 && paper_iters >= 1, "--iters and --paper-iters must be >= 1");
  need(min_reps >= 1 && max_reps >= min_reps,
       "need 1 <= --min-reps <= --max-reps (got " + std::to_string(min_reps) + ", " + std::to_string(max_reps) + ")");
  need(ci_target > 0 && ci_target < 1, "--ci-target is a fraction in (0, 1), e.g. 0.01 for 1%");
  need(budget_s > 0, "--timing-budget must be > 0 seconds");
  need(paper_warmup_budget_s > 0, "--paper-warmup-budget must be > 0 seconds");
  need(repeats >= 1, "--timing-repeats must be >= 1");
  need(rep_gap_ms >= 0 && rep_gap_ms <= 60e3, "--rep-gap-ms must be in [0, 60000]");
  need(device_iters >= 0, "--device-iters must be >= 0 (0 turns the device view off)");
}

nlohmann::json TimingOptions::to_json() const {
  return {{"warmup", warmup},           {"iters", iters},           {"paper_warmup", paper_warmup},
          {"paper_iters", paper_iters}, {"min_reps", min_reps},     {"max_reps", max_reps},
          {"ci_target", ci_target},     {"budget_s", budget_s},     {"paper_warmup_budget_s", paper_warmup_budget_s},
          {"repeats", repeats},         {"rep_gap_ms", rep_gap_ms}, {"device_iters", device_iters}};
}

std::vector<std::string> TimingOptions::to_args() const {
  auto num = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.17g", x);
    return std::string(b);
  };
  return {"--warmup",
          std::to_string(warmup),
          "--iters",
          std::to_string(iters),
          "--paper-warmup",
          std::to_string(paper_warmup),
          "--paper-iters",
          std::to_string(paper_iters),
          "--min-reps",
          std::to_string(min_reps),
          "--max-reps",
          std::to_string(max_reps),
          "--ci-target",
          num(ci_target),
          "--timing-budget",
          num(budget_s),
          "--paper-warmup-budget",
          num(paper_warmup_budget_s),
          "--timing-repeats",
          std::to_string(repeats),
          "--rep-gap-ms",
          num(rep_gap_ms),
          "--device-iters",
          std::to_string(device_iters)};
}

int TimingOptions::next_paper_warmup_chunk(int done, double elapsed_s) const {
  if (done >= paper_warmup || elapsed_s >= paper_warmup_budget_s) return 0;
  return std::min(kPaperWarmupChunk, paper_warmup - done);
}

double initial_hold_us(double longest_issue_us) { return std::min(kMaxHoldUs, 2 * longest_issue_us + 50); }

double next_hold_us(double hold_us, double issue_us) {
  return std::min(kMaxHoldUs, std::max(2 * hold_us, 2 * issue_us + 50));
}

double quantile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  double pos = q * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

// The median's interval: the number of values below the median is Binomial(n, 1/2); ranks n/2 -+ 1.96 sqrt(n)/2
// (normal approximation) bound it at ~95%, rounded outwards.
std::pair<int, int> median_ci_ranks(int n) {
  if (n <= 0) return {0, 0};
  double half = 0.98 * std::sqrt(static_cast<double>(n));
  int lo = static_cast<int>(std::floor(n / 2.0 - half));
  int hi = static_cast<int>(std::ceil(n / 2.0 + 1 + half));
  return {std::clamp(lo, 1, n), std::clamp(hi, 1, n)};
}

SampleStats summarize(std::vector<double> v) {
  SampleStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.n = static_cast<int>(v.size());
  s.median = quantile_sorted(v, 0.5);
  s.q25 = quantile_sorted(v, 0.25);
  s.q75 = quantile_sorted(v, 0.75);
  s.min = v.front();
  s.max = v.back();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / s.n;
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  s.stddev = s.n > 1 ? std::sqrt(var / (s.n - 1)) : 0;
  s.cv = s.mean > 0 ? s.stddev / s.mean : 0;
  auto [lo, hi] = median_ci_ranks(s.n);
  if (s.n < 6) lo = 1, hi = s.n;  // too few values for the approximation: the whole range
  s.ci_low = v[lo - 1];
  s.ci_high = v[hi - 1];
  return s;
}

bool repetitions_done(const TimingOptions& o, int reps, const SampleStats& pkb, const SampleStats& paper,
                      double elapsed_s) {
  if (reps >= o.max_reps) return true;
  if (reps >= 1 && elapsed_s >= o.budget_s) return true;
  return reps >= o.min_reps && pkb.ci_half_rel() <= o.ci_target && paper.ci_half_rel() <= o.ci_target;
}

double host_probe_us() {
  // 1 << 15 multiply-adds, each depending on the last: no instruction-level parallelism, no memory, so the time
  // is the core's clock and whatever shares the core with this thread (an SMT sibling, the hypervisor).
  uint64_t x = 0x9e3779b97f4a7c15ull;
  const double t0 = now_us();
  for (int i = 0; i < (1 << 15); ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    asm volatile("" : "+r"(x));  // keeps the chain: the compiler may neither fold nor vectorize it
  }
  return now_us() - t0;
}

std::vector<uint32_t> single_cycle_permutation(uint32_t n, uint32_t seed) {
  std::vector<uint32_t> next(n);
  std::iota(next.begin(), next.end(), 0u);
  std::mt19937 rng(seed);
  // Sattolo: swapping each entry only with an earlier one (never itself) leaves one cycle, not several.
  for (uint32_t i = n; i-- > 1;) std::swap(next[i], next[std::uniform_int_distribution<uint32_t>(0, i - 1)(rng)]);
  return next;
}

double host_chase_probe_us() {
  constexpr uint32_t kEntries = (1u << 20) / sizeof(uint32_t);
  constexpr int kSteps = 1 << 13;
  static const std::vector<uint32_t> next = single_cycle_permutation(kEntries, 0x5eed);
  uint64_t warm = 0;
  for (uint32_t v : next) warm += v;  // the table into the cache: the walk measures the core, not what evicted it
  asm volatile("" : : "r"(warm));
  uint32_t at = 0;
  uint64_t acc = 0;
  const double t0 = now_us();
  for (int i = 0; i < kSteps; ++i) {
    at = next[at];
    // A branch on the loaded value (half of them mispredicted); the empty asm in each arm keeps it a branch.
    if (at & 1) {
      acc += at;
      asm volatile("" : "+r"(acc));
    } else {
      acc ^= at;
      asm volatile("" : "+r"(acc));
    }
  }
  const double t = now_us() - t0;
  asm volatile("" : : "r"(acc), "r"(at));
  return t;
}

namespace {
const char* stop_reason(const TimingOptions& o, int reps, const SampleStats& pkb, const SampleStats& paper,
                        double elapsed_s) {
  if (reps >= o.min_reps && pkb.ci_half_rel() <= o.ci_target && paper.ci_half_rel() <= o.ci_target) return "ci_target";
  if (reps >= o.max_reps) return "max_reps";
  return "budget";
}
}  // namespace

nlohmann::json TimingStats::to_json() const {
  nlohmann::json j = stats_json(pkb.stats);
  j["method"] = "pkb";
  j["iters"] = pkb.values_us.size();
  j["iter_us"] = pkb.values_us;
  nlohmann::json p = stats_json(paper.stats);
  p["reps"] = paper.values_us.size();
  p["rep_us"] = paper.values_us;
  j["paper"] = p;
  j["reps"] = reps;
  j["stopped_by"] = stopped_by;
  j["paper_warmup_calls"] = paper_warmup_calls;
  j["host_loop_us"] = host_loop_us;
  j["escape_event_us"] = escape_event_us;
  j["escape_device_us"] = escape_device_us;
  j["stream_escape"] = stream_escape;
  j["repeated_content_iters"] = repeated_content_iters;
  j["fresh_median_us"] = fresh_median_us;
  j["repeated_median_us"] = repeated_median_us;
  j["clocks"] = clocks;
  j["throttled"] = throttled;
  j["host_probe_us"] = host_probe_us;
  j["host_chase_probe_us"] = host_chase_probe_us;
  j["dispatch_cpu"] = dispatch_cpu;
  if (dispatch_cpu < 0) j["dispatch_note"] = dispatch_note;
  if (device.calls > 0) {
    nlohmann::json d = device.measured() ? stats_json(device.method.stats) : nlohmann::json::object();
    d["calls"] = device.calls;
    d["unheld"] = device.unheld;
    d["busy"] = device.busy;
    d["host_bound"] = device.host_bound;
    d["hold_us"] = device.hold_us;
    d["max_start_spread_us"] = device.max_start_spread_us;
    d["max_gap_us"] = device.max_gap_us;
    d["call_us"] = device.method.values_us;
    if (!device.measured()) d["note"] = device.note;
    j["device"] = d;
  }
  return j;
}

int CopyPlan::first_rep_of(int copy, const TimingOptions& o) const {
  for (int j = 0; j < o.max_timed_calls(); ++j)
    if (timed_copy(j) == copy) return j / o.calls_per_rep();
  return -1;
}

int CopyPlan::checked_copy(int i, uint64_t draw, const TimingOptions& o) const {
  int rep = i < o.max_reps ? i : 0;
  return timed_copy(rep * o.calls_per_rep() + static_cast<int>(draw % o.calls_per_rep()));
}

int rotation_copies(size_t input_bytes, size_t l2_bytes, size_t budget_bytes, size_t calls) {
  if (input_bytes == 0) return 1;
  size_t want = 3 * l2_bytes / input_bytes + 1;
  size_t fit = std::max<size_t>(1, budget_bytes / input_bytes);
  return static_cast<int>(std::clamp<size_t>(std::min({want, fit, calls}), 1, 1 << 16));
}

CopyPlan timing_copies(size_t input_bytes, size_t l2_bytes, const TimingOptions& o, size_t budget_bytes) {
  size_t fit = input_bytes ? std::max<size_t>(2, budget_bytes / input_bytes) : size_t{1} << 20;
  CopyPlan p;
  p.warmup_copies = std::clamp(rotation_copies(input_bytes, l2_bytes, budget_bytes / 2, o.warmup_calls()), 1,
                               static_cast<int>(std::min<size_t>(fit / 2, 1 << 16)));
  size_t want = static_cast<size_t>(o.max_timed_calls() + kEscapeProbeCalls);
  size_t fresh = std::clamp<size_t>(std::min(want, fit - p.warmup_copies), 1, 8192);
  p.copies = p.warmup_copies + static_cast<int>(fresh);
  return p;
}

size_t heap_copy_bytes(const ProblemSpec& spec, const RunShape& run, bool inputs) {
  size_t total = 0;
  auto add = [&](const TensorSpec& t) {
    size_t biggest = 0;
    for (int r = 0; r < run.world; ++r) {
      size_t b = dtype_size(tensor_dtype(t, run));
      for (int64_t d : tensor_shape(t, run, r)) b *= d;
      biggest = std::max(biggest, b);
    }
    total += align_to_heap(biggest);
  };
  if (inputs) {
    for (const auto& in : spec.inputs)
      if (in.tensor) add(*in.tensor);
  } else {
    for (const auto& out : spec.outputs) add(out);
  }
  return total;
}

CopyPlan world_timing_copies(const ProblemSpec& spec, const RunShape& run, bool cuda, const TimingOptions& o) {
  return timing_copies(heap_copy_bytes(spec, run, true), cuda ? cuda_l2_bytes() : 0, o,
                       cuda ? kTimingCopyBudgetCuda : kTimingCopyBudgetCpu);
}

TimingStats time_iterations(Runtime& rt, const CopyPlan& plan, const std::function<void(int)>& run,
                            const TimingOptions& o, const TimingHooks* hooks) {
  TimingStats s;
  // Warm-up, repetitions and probe launch from one core of their own (core/dispatch_pin.h).
  const DispatchPin pin;
  s.dispatch_cpu = pin.cpu();
  s.dispatch_note = pin.note();
  ClockMonitor clocks(rt.is_cuda() ? rt.device() : -1);
  const bool root = rt.rank() == 0;
  auto before = [&](int copy) {
    if (hooks && hooks->before) hooks->before(copy);
  };
  auto after = [&](int j, int copy) {
    if (hooks && hooks->after_timed) hooks->after_timed(j, copy);
  };
  // The pkb method's warm-up (a barrier before each call): at the start, and again after each --rep-gap-ms pause.
  double longest_issue_us = 0;  // the host's time to issue one warm-up call: sizes the device view's hold
  auto pkb_warmup = [&] {
    for (int i = 0; i < o.warmup; ++i) {
      int k = plan.warmup_copy(i);
      before(k);
      rt.barrier();
      const double h0 = rt.host_now_us();
      run(k);
      longest_issue_us = std::max(longest_issue_us, rt.host_now_us() - h0);
    }
  };
  // Warm-up: the pkb method's, then the paper method's, back to back.
  pkb_warmup();
  const double w0 = now_us();
  while (true) {
    int chunk = o.next_paper_warmup_chunk(s.paper_warmup_calls, (now_us() - w0) / 1e6);
    MPI_Bcast(&chunk, 1, MPI_INT, 0, MPI_COMM_WORLD);  // rank 0's clock decides: one count for all ranks
    if (chunk == 0) break;
    for (int i = 0; i < chunk; ++i, ++s.paper_warmup_calls) {
      int k = plan.warmup_copy(o.warmup + s.paper_warmup_calls);
      before(k);
      run(k);
    }
    throw_if(rt.synchronize(), "warm-up");
  }
  throw_if(rt.synchronize(), "warm-up");
  MPI_Barrier(MPI_COMM_WORLD);

  // The device view runs on GPUs only: on CPU ranks record() is the host's clock, and there is no queue to hold.
  const bool device_view = rt.is_cuda() && o.device_iters > 0;
  const bool device_calls_run = o.device_iters > 0;  // on CPU ranks too, untimed: the same ordinals everywhere
  rt.timers_reserve(2 * std::max({o.iters, o.paper_iters, device_view ? o.device_iters : 0}));
  std::vector<double> pkb_values, paper_values;  // rank 0: across ranks; others: their own
  std::vector<int> pkb_ordinals;
  auto pkb_block = [&](int base) {
    for (int i = 0; i < o.iters; ++i) {
      int k = plan.timed_copy(base + i);
      before(k);
      rt.barrier();
      rt.record(2 * i);
      run(k);
      rt.record(2 * i + 1);
      after(base + i, k);
    }
    throw_if(rt.synchronize(), "timed loop (pkb method)");
    std::vector<double> mine(o.iters), all(static_cast<size_t>(o.iters) * rt.world());
    for (int i = 0; i < o.iters; ++i) mine[i] = 1e3 * rt.elapsed_ms(2 * i, 2 * i + 1);
    MPI_Gather(mine.data(), o.iters, MPI_DOUBLE, all.data(), o.iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int i = 0; i < o.iters; ++i) {
      double slowest = mine[i];
      for (int q = 0; root && q < rt.world(); ++q)
        slowest = std::max(slowest, all[static_cast<size_t>(q) * o.iters + i]);
      pkb_values.push_back(slowest);
      pkb_ordinals.push_back(base + i);
    }
  };
  auto paper_block = [&](int base) {
    MPI_Barrier(MPI_COMM_WORLD);
    rt.barrier();  // every rank starts its back-to-back calls together, then no barrier until the end
    for (int i = 0; i < o.paper_iters; ++i) {
      int k = plan.timed_copy(base + i);
      before(k);
      rt.record(2 * i);
      run(k);
      rt.record(2 * i + 1);
      after(base + i, k);
    }
    throw_if(rt.synchronize(), "timed loop (paper method)");
    double sum = 0;
    for (int i = 0; i < o.paper_iters; ++i) sum += 1e3 * rt.elapsed_ms(2 * i, 2 * i + 1);
    double mean = sum / o.paper_iters, worst = mean;
    MPI_Reduce(&mean, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    paper_values.push_back(root ? worst : mean);
  };

  // The device view: every call behind a hold, the GPU's start checked to come after the host issued the call.
  // Every rank makes every call (they hold collectives); a call counts when it was held on every rank, its time
  // the slowest rank's. The device barrier after the hold starts the ranks together whatever their holds. The
  // outputs are poisoned after the hold, so nothing a candidate wrote during it survives into the window.
  std::vector<double> device_values;
  double hold_us = initial_hold_us(longest_issue_us);
  int device_calls = 0, device_unheld = 0, device_busy = 0, device_host_bound = 0;
  double max_spread_us = 0, max_gap_us = 0;
  const bool untrusted = hooks && hooks->untrusted;
  std::string device_off;  // why the view measures nothing though its calls run
  if (untrusted && device_view && rt.world() > 1)
    device_off = "candidates have no device view at W > 1: a copy engine could fetch peers' inputs during the hold";
  else if (untrusted && device_view && !rt.hold_fills_device())
    device_off = "the hold cannot take every SM's thread slots on this GPU, so other work could run beside it";
  bool device_on = device_view && device_off.empty();
  auto device_block = [&](int base) {
    const int n = o.device_iters;
    std::vector<double> mine(n, 0), issue(n, 0), all;
    std::vector<char> held(n, 0);
    if (device_on) rt.hold_slots_reserve(n);
    for (int i = 0; i < n; ++i) {
      const int ordinal = base + i, k = plan.timed_copy(ordinal);
      ++device_calls;
      if (device_on) rt.hold(hold_us, i);
      before(k);
      rt.barrier();
      if (device_on) rt.record(2 * i);
      const double h0 = rt.host_now_us();
      run(k);
      issue[i] = rt.host_now_us() - h0;
      if (device_on) {
        held[i] = !rt.reached(2 * i);
        rt.record(2 * i + 1);
        if (!held[i] || 2 * issue[i] > hold_us)
          hold_us = next_hold_us(hold_us, issue[i]);
        else if (untrusted)
          // A candidate's hold follows its own last issue down as well as up: one that issued its warm-ups slowly
          // to be given a long hold gets it once, not for every call, so the work it could start beside a hold
          // (host threads, copy engines) is bounded by what it spends issuing, which its time never falls below.
          hold_us = initial_hold_us(issue[i]);
      }
      after(ordinal, k);
    }
    throw_if(rt.synchronize(), "timed loop (device view)");
    if (!device_on) return;
    // Per call and rank: its time and what kind of call it was; for candidates the time is never below the issue.
    enum Kind : int { kHeld = 0, kHostBound = 1, kUnheld = 2, kBusy = 3 };  // a call takes its ranks' worst kind
    std::vector<int> kind(n, kUnheld);
    std::vector<Runtime::HoldTrace> traces = rt.hold_traces(n);
    double traced[2] = {0, 0};  // the largest start spread and gap this rank saw
    for (int i = 0; i < n; ++i) {
      traced[0] = std::max(traced[0], traces[i].start_spread_us);
      traced[1] = std::max(traced[1], traces[i].longest_gap_us);
      if (traces[i].start_spread_us > kHoldBusySpreadUs || traces[i].longest_gap_us > kHoldBusyGapUs) {
        kind[i] = kBusy;
      } else if (held[i]) {
        const double window = 1e3 * rt.elapsed_ms(2 * i, 2 * i + 1);
        kind[i] = untrusted && issue[i] > window ? kHostBound : kHeld;
        mine[i] = kind[i] == kHostBound ? issue[i] : window;
      }
    }
    // One gather: each rank sends its calls' times, their kinds and its two trace maxima as n + n + 2 doubles.
    const size_t row = 2 * static_cast<size_t>(n) + 2;
    std::vector<double> sent(mine);
    sent.insert(sent.end(), kind.begin(), kind.end());
    sent.insert(sent.end(), traced, traced + 2);
    all.resize(row * rt.world());
    MPI_Gather(sent.data(), static_cast<int>(row), MPI_DOUBLE, all.data(), static_cast<int>(row), MPI_DOUBLE, 0,
               MPI_COMM_WORLD);
    for (int q = 0; root && q < rt.world(); ++q) {
      max_spread_us = std::max(max_spread_us, all[q * row + 2 * n]);
      max_gap_us = std::max(max_gap_us, all[q * row + 2 * n + 1]);
    }
    int held_calls = 0;
    for (int i = 0; root && i < n; ++i) {
      double slowest = 0;
      int worst_kind = kHeld;
      for (int q = 0; q < rt.world(); ++q) {
        worst_kind = std::max(worst_kind, static_cast<int>(all[q * row + n + i]));
        slowest = std::max(slowest, all[q * row + i]);
      }
      if (worst_kind == kBusy) {
        ++device_busy;
      } else if (worst_kind == kUnheld) {
        ++device_unheld;
      } else {
        device_host_bound += worst_kind == kHostBound;
        device_values.push_back(slowest);
        ++held_calls;
      }
    }
    // A block without one held call (a call that waits on the GPU from the host, at the longest hold): no later
    // block will do better, so the view stops here (rank 0 decides for every rank: the calls hold collectives).
    // Its calls still run in later repetitions, untimed, like every other ordinal.
    int stop = root && held_calls == 0;
    MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (stop) device_on = false;
  };

  double t0 = now_us();
  int reps = 0;
  for (int done = 0; !done;) {
    int base = reps * o.calls_per_rep();
    if (reps > 0 && o.rep_gap_ms > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.rep_gap_ms));
      pkb_warmup();
      throw_if(rt.synchronize(), "warm-up after the pause");
      MPI_Barrier(MPI_COMM_WORLD);
    }
    double probe = host_probe_us(), chase = host_chase_probe_us();
    if (root) s.host_probe_us.push_back(probe), s.host_chase_probe_us.push_back(chase);
    clocks.sample(reps, "before");
    // Alternating which method goes first cancels drift and order effects between the two.
    if (reps % 2 == 0)
      pkb_block(base), paper_block(base + o.iters);
    else
      paper_block(base + o.iters), pkb_block(base);
    // The device view after both (it changes neither method's measurement); its calls run even where it measures
    // nothing, so that every repetition makes the same calls on the same copies.
    if (device_calls_run) device_block(base + o.iters + o.paper_iters);
    clocks.sample(reps, "after");
    ++reps;
    double elapsed_s = (now_us() - t0) / 1e6;
    SampleStats a = summarize(pkb_values), b = summarize(paper_values);
    done = root && repetitions_done(o, reps, a, b, elapsed_s);
    if (root && done) s.stopped_by = stop_reason(o, reps, a, b, elapsed_s);
    MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
  }
  s.reps = reps;
  s.host_loop_us = now_us() - t0;

  // Escape probe: a stream whose events see a fraction of the time a device-wide synchronize waits for means
  // work was launched elsewhere and never joined back. An honest call's synchronize returns after its events
  // plus fixed host costs (the launch, waking the host thread; tens of µs, more when MPS or a busy node delays
  // the wake-up), and both clocks jitter in proportion to the call: 2x absorbs the proportional part and
  // +100 µs the fixed part, so only work that runs at least as long as the call itself, beyond 100 µs, escapes
  // detection-free. The probe's calls take fresh copies after the last repetition's.
  std::vector<double> ev, dev;
  for (int i = 0; i < kEscapeProbeCalls; ++i) {
    int k = plan.timed_copy(reps * o.calls_per_rep() + i);
    before(k);
    MPI_Barrier(MPI_COMM_WORLD);
    rt.barrier();
    throw_if(rt.stream_synchronize(), "escape probe");
    double h0 = now_us();
    rt.record(0);
    run(k);
    rt.record(1);
    throw_if(rt.synchronize(), "escape probe");
    dev.push_back(now_us() - h0);
    ev.push_back(1e3 * rt.elapsed_ms(0, 1));
  }
  s.escape_event_us = median(ev);
  s.escape_device_us = median(dev);
  constexpr double kEscapeRatio = 2, kEscapeSlackUs = 100;  // the proportional and the fixed part (above)
  bool escaped = rt.is_cuda() && s.escape_device_us > kEscapeRatio * s.escape_event_us + kEscapeSlackUs;
  int flags[2] = {escaped, clocks.throttled()}, any[2] = {0, 0};
  MPI_Allreduce(flags, any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  s.stream_escape = any[0] != 0;
  s.throttled = any[1] != 0;
  s.clocks = clocks.to_json();

  s.pkb = {summarize(pkb_values), pkb_values};
  s.paper = {summarize(paper_values), paper_values};
  if (device_view) {
    s.device.method = {summarize(device_values), device_values};
    s.device.calls = device_calls;
    s.device.unheld = device_unheld;
    s.device.busy = device_busy;
    s.device.host_bound = device_host_bound;
    s.device.hold_us = hold_us;
    s.device.max_start_spread_us = max_spread_us;
    s.device.max_gap_us = max_gap_us;
    if (!device_off.empty())
      s.device.note = device_off;
    else if (device_values.empty() && device_busy > 0)
      s.device.note = "every hold found the GPU running work the harness had not enqueued (" +
                      std::to_string(device_busy) + " calls): work outside the stream";
    else if (device_values.empty())
      s.device.note = "no call was held on every rank: the GPU started each before the host had issued it (at a " +
                      std::to_string(static_cast<int>(hold_us)) +
                      " us hold), so the call waits on the GPU from the host inside";
  }
  // Calls that saw input contents seen before (only when memory did not allow one copy per call): a kernel that
  // memoizes on content is much faster on those. Recorded so that it shows.
  int fresh_copies = plan.copies - plan.warmup_copies;
  std::vector<double> fresh, repeated;
  for (size_t i = 0; i < pkb_values.size(); ++i)
    (fresh_copies > 0 && pkb_ordinals[i] < fresh_copies ? fresh : repeated).push_back(pkb_values[i]);
  s.repeated_content_iters = static_cast<int>(repeated.size());
  if (!repeated.empty() && !fresh.empty()) {
    s.fresh_median_us = median(fresh);
    s.repeated_median_us = median(repeated);
  }
  return s;
}

}  // namespace pkb
