#include "worker/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <span>

#include "core/error.h"

namespace pkb {
namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

protocol::SampleSummary summary_of(const SampleStats& s) {
  return {s.median, s.mean, s.min,         s.max,    s.stddev,  s.cv,
          s.q25,    s.q75,  s.q75 - s.q25, s.ci_low, s.ci_high, s.ci_half_rel()};
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

double fresh_to_neighbours(const std::vector<double>& values, const std::vector<bool>& is_fresh) {
  std::vector<double> ratios;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!is_fresh[i]) continue;
    double sum = 0;
    int n = 0;
    for (size_t j = i; j-- > 0;)  // the nearest repeated call before
      if (!is_fresh[j]) {
        sum += values[j], ++n;
        break;
      }
    for (size_t j = i + 1; j < values.size(); ++j)  // and after
      if (!is_fresh[j]) {
        sum += values[j], ++n;
        break;
      }
    if (n > 0 && sum > 0) ratios.push_back(values[i] / (sum / n));
  }
  return ratios.empty() ? 0.0 : summarize(ratios).median;
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

void wake_host_core(double us) {
  const double t0 = now_us();
  uint64_t x = 1;
  while (now_us() - t0 < us) {
    for (int i = 0; i < 256; ++i) x = x * 6364136223846793005ull + 1;
    asm volatile("" : "+r"(x));
  }
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

// One walk of `steps` dependent loads through `next` from entry 0, in microseconds.
static double chase_walk_us(std::span<const uint32_t> next, int steps) {
  uint32_t at = 0;
  uint64_t acc = 0;
  const double t0 = now_us();
  for (int i = 0; i < steps; ++i) {
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

double chase_probe_us(std::span<const uint32_t> table, int walks) {
  uint64_t warm = 0;
  for (uint32_t v : table) warm += v;  // the table into the cache: the walk measures the core, not what evicted it
  asm volatile("" : : "r"(warm));
  double best = chase_walk_us(table, kChaseSteps);
  for (int w = 1; w < walks; ++w) best = std::min(best, chase_walk_us(table, kChaseSteps));
  return best;
}

double host_chase_probe_us() {
  static const std::vector<uint32_t> table = single_cycle_permutation(kChaseTableBytes / sizeof(uint32_t), 0x5eed);
  return chase_probe_us(table, kChaseWalks);
}

protocol::RankTiming TimingStats::to_record() const {
  protocol::RankTiming t;
  t.pkb = summary_of(pkb.stats);
  t.iters = static_cast<int>(pkb.values_us.size());
  t.iter_us = pkb.values_us;
  t.paper = {summary_of(paper.stats), static_cast<int>(paper.values_us.size()), paper.values_us};
  t.reps = reps;
  t.stopped_by = stopped_by;
  t.paper_warmup_calls = paper_warmup_calls;
  t.host_loop_us = host_loop_us;
  t.escape_event_us = escape_event_us;
  t.escape_device_us = escape_device_us;
  t.stream_escape = stream_escape;
  t.repeated_content_iters = repeated_content_iters;
  t.fresh_median_us = fresh.median;
  t.repeated_median_us = repeated.median;
  if (fresh.n > 0 && repeated.n > 0)
    t.intervals = protocol::ContentIntervals{fresh.n, fresh.ci_low, fresh.ci_high, repeated.ci_low, repeated.ci_high};
  if (fresh_to_neighbours > 0) t.fresh_to_neighbours = fresh_to_neighbours;
  t.clocks = clocks;
  t.throttled = throttled;
  t.host_probe_us = host_probe_us;
  t.host_chase_probe_us = host_chase_probe_us;
  t.dispatch_cpu = dispatch_cpu;
  if (dispatch_cpu < 0) t.dispatch_note = dispatch_note;
  if (device.calls > 0) {
    protocol::DeviceTiming& d = t.device.emplace();
    static_cast<protocol::DeviceCounts&>(d) = device;
    if (device.measured()) d.stats = summary_of(device.method.stats);
    d.call_us = device.method.values_us;
    if (!device.measured()) d.note = device.note;
  }
  return t;
}

nlohmann::json TimingStats::to_json() const { return to_record(); }

// Ordinal j's copy, and whether it is fresh. The fresh copies go to the pkb ordinals first (pkb_fresh of them, spread
// evenly: the i-th pkb ordinal is fresh when i * pkb_fresh mod pkb_calls < pkb_fresh), the rest to the other
// ordinals alike; every other ordinal revisits a warm-up copy.
CopyPlan::Use CopyPlan::use(int j) const {
  const int fresh = copies - warmup_copies, n = calls();
  if (fresh <= 0) return {false, j % copies};
  if (n <= fresh || j >= n) return {j < fresh, warmup_copies + j % fresh};
  const int pkb_calls = reps * pkb_per_rep, pkb_fresh = std::min(fresh, pkb_calls);
  const int rep = std::min(j / per_rep, reps), at = j - rep * per_rep;
  const bool pkb = rep < reps && at < pkb_per_rep;
  const int pkb_before = rep * pkb_per_rep + (rep < reps ? std::min(at, pkb_per_rep) : 0);  // pkb ordinals below j
  const int64_t i = pkb ? pkb_before : j - pkb_before;  // j's index among the ordinals of its kind
  const int64_t kind_calls = pkb ? pkb_calls : n - pkb_calls, kind_fresh = pkb ? pkb_fresh : fresh - pkb_fresh;
  if (i * kind_fresh % kind_calls >= kind_fresh) return {false, j % warmup_copies};
  return {true, warmup_copies + (pkb ? 0 : pkb_fresh) + static_cast<int>(i * kind_fresh / kind_calls)};
}

CopyPlan copy_plan(int copies, int warmup_copies, const TimingOptions& o) {
  return {copies, warmup_copies, o.max_reps, o.calls_per_rep(), o.iters};
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
  return copy_plan(p.warmup_copies + static_cast<int>(fresh), p.warmup_copies, o);
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

}  // namespace pkb
