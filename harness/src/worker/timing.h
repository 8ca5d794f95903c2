// The timed loop, the same for references and candidates (DESIGN.md §6): warm-up, then per-iteration events
// with a cross-rank barrier before each iteration (not timed) so every rank starts together, inputs rotated over
// enough copies to exceed 3x L2, a host clock around the loop, and a check for work that escapes the stream.
#pragma once

#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/runtime.h"

namespace pkb {

struct TimingOptions {
  int warmup = 10;  // untimed iterations first
  int iters = 50;   // timed iterations
};

struct TimingStats {
  std::vector<double> iter_us;  // per iteration, slowest rank
  double median_us = 0, mean_us = 0, min_us = 0, max_us = 0, stddev_us = 0, cv = 0;
  double host_loop_us = 0;      // wall time of the timed loop on this rank, barriers included
  double escape_event_us = 0;   // median stream-event time in the escape probe
  double escape_device_us = 0;  // median time until a device-wide synchronize returned
  bool stream_escape = false;   // device-wide work far exceeded what the stream's events saw
  int repeated_content_iters = 0;                    // timed calls whose input contents an earlier call had
  double fresh_median_us = 0, repeated_median_us = 0;  // medians of the two kinds, when both exist

  nlohmann::json to_json() const;
};

// Untimed work around each call, for candidates: `before` runs before every call (warm-up, timed, probe), ahead
// of the cross-rank barrier (poisoning the outputs); `after_timed` after a timed call's end event (capturing its
// outputs). Neither is inside the events' window.
struct TimingHooks {
  std::function<void(int copy)> before;
  std::function<void(int timed_iter, int copy)> after_timed;
};

// Escape-probe calls after the timed loop.
constexpr int kEscapeProbeCalls = 5;
// Input copy used by call `call` (0-based over warm-up, timed, probe): never the same content twice in a row.
inline int copy_of_call(int call, int copies) { return call % copies; }

// Runs run(copy) warmup + iters times plus a short escape probe. Collective over MPI_COMM_WORLD: every rank
// calls it; rank 0's result holds the slowest-rank statistics (others hold their own).
TimingStats time_iterations(Runtime& rt, int copies, const std::function<void(int)>& run, const TimingOptions& o,
                            const TimingHooks* hooks = nullptr);

// Number of input copies to rotate over so that they exceed 3x the L2 cache (at least 1, at most `cap`).
int rotation_copies(size_t input_bytes, size_t l2_bytes, int cap);

// Memory per rank that timing copies may take (their inputs; captures of outputs come on top).
constexpr size_t kTimingCopyBudgetCuda = size_t{2} << 30;
constexpr size_t kTimingCopyBudgetCpu = size_t{32} << 20;

// Copies for timing a candidate: enough that no call of the loop sees the same input contents twice (so
// memoizing on content never pays) and that they exceed 3x L2, within a memory budget per rank; at least 2.
int timing_copies(size_t input_bytes, size_t l2_bytes, const TimingOptions& o, size_t budget_bytes);

}  // namespace pkb
