#include "worker/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"

namespace pkb {
namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void fill_stats(TimingStats& s) {
  const auto& v = s.iter_us;
  if (v.empty()) return;
  s.median_us = median(v);
  s.min_us = *std::min_element(v.begin(), v.end());
  s.max_us = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean_us = sum / v.size();
  double var = 0;
  for (double x : v) var += (x - s.mean_us) * (x - s.mean_us);
  s.stddev_us = v.size() > 1 ? std::sqrt(var / (v.size() - 1)) : 0;
  s.cv = s.mean_us > 0 ? s.stddev_us / s.mean_us : 0;
}

void throw_if(const std::string& err, const char* where) {
  if (!err.empty()) throw Error(std::string(where) + ": " + err);
}

}  // namespace

nlohmann::json TimingStats::to_json() const {
  return {{"median_us", median_us}, {"mean_us", mean_us}, {"min_us", min_us}, {"max_us", max_us},
          {"stddev_us", stddev_us}, {"cv", cv}, {"iters", iter_us.size()}, {"host_loop_us", host_loop_us},
          {"escape_event_us", escape_event_us}, {"escape_device_us", escape_device_us},
          {"stream_escape", stream_escape}, {"repeated_content_iters", repeated_content_iters},
          {"fresh_median_us", fresh_median_us}, {"repeated_median_us", repeated_median_us}, {"iter_us", iter_us}};
}

int rotation_copies(size_t input_bytes, size_t l2_bytes, int cap) {
  if (input_bytes == 0) return 1;
  size_t want = 3 * l2_bytes / input_bytes + 1;
  return static_cast<int>(std::clamp<size_t>(want, 1, static_cast<size_t>(cap)));
}

int timing_copies(size_t input_bytes, size_t l2_bytes, const TimingOptions& o, size_t budget_bytes) {
  size_t calls = static_cast<size_t>(o.warmup + o.iters + kEscapeProbeCalls);
  size_t want = std::max<size_t>(calls, static_cast<size_t>(rotation_copies(input_bytes, l2_bytes, 1 << 20)));
  size_t fit = input_bytes ? budget_bytes / input_bytes : want;
  return static_cast<int>(std::clamp<size_t>(std::min(want, fit), 2, 4096));
}

TimingStats time_iterations(Runtime& rt, int copies, const std::function<void(int)>& run, const TimingOptions& o,
                            const TimingHooks* hooks) {
  TimingStats s;
  int call = 0;
  auto before = [&](int copy) {
    if (hooks && hooks->before) hooks->before(copy);
  };
  for (int i = 0; i < o.warmup; ++i, ++call) {
    int k = copy_of_call(call, copies);
    before(k);
    rt.barrier();
    run(k);
  }
  throw_if(rt.synchronize(), "warm-up");
  MPI_Barrier(MPI_COMM_WORLD);

  rt.timers_reserve(2 * o.iters);
  double t0 = now_us();
  for (int i = 0; i < o.iters; ++i, ++call) {
    int k = copy_of_call(call, copies);
    before(k);
    rt.barrier();
    rt.record(2 * i);
    run(k);
    rt.record(2 * i + 1);
    if (hooks && hooks->after_timed) hooks->after_timed(i, k);
  }
  throw_if(rt.synchronize(), "timed loop");
  s.host_loop_us = now_us() - t0;
  std::vector<double> mine(o.iters);
  for (int i = 0; i < o.iters; ++i) mine[i] = 1e3 * rt.elapsed_ms(2 * i, 2 * i + 1);

  // Escape probe: a stream whose events see a fraction of the time a device-wide synchronize waits for means
  // work was launched elsewhere and never joined back.
  std::vector<double> ev, dev;
  for (int i = 0; i < kEscapeProbeCalls; ++i, ++call) {
    int k = copy_of_call(call, copies);
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
  s.stream_escape = rt.is_cuda() && s.escape_device_us > 2 * s.escape_event_us + 100;

  // Slowest rank per iteration, on rank 0.
  std::vector<double> all(static_cast<size_t>(o.iters) * rt.world());
  MPI_Gather(mine.data(), o.iters, MPI_DOUBLE, all.data(), o.iters, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  int any_escape = s.stream_escape, escape = 0;
  MPI_Allreduce(&any_escape, &escape, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  s.stream_escape = escape != 0;
  if (rt.rank() == 0) {
    s.iter_us.assign(o.iters, 0);
    for (int q = 0; q < rt.world(); ++q)
      for (int i = 0; i < o.iters; ++i) s.iter_us[i] = std::max(s.iter_us[i], all[static_cast<size_t>(q) * o.iters + i]);
  } else {
    s.iter_us = mine;
  }
  fill_stats(s);
  // Calls that saw input contents seen before (only when memory did not allow one copy per call): a kernel that
  // memoizes on content is much faster on those. Recorded so that it shows.
  std::vector<double> fresh, repeated;
  for (int i = 0; i < o.iters; ++i) (o.warmup + i < copies ? fresh : repeated).push_back(s.iter_us[i]);
  s.repeated_content_iters = static_cast<int>(repeated.size());
  if (!repeated.empty() && !fresh.empty()) {
    s.fresh_median_us = median(fresh);
    s.repeated_median_us = median(repeated);
  }
  return s;
}

}  // namespace pkb
