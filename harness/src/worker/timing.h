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

  nlohmann::json to_json() const;
};

// Runs run(copy) warmup + iters times plus a short escape probe. Collective over MPI_COMM_WORLD: every rank
// calls it; rank 0's result holds the slowest-rank statistics (others hold their own).
TimingStats time_iterations(Runtime& rt, int copies, const std::function<void(int)>& run, const TimingOptions& o);

// Number of input copies to rotate over so that they exceed 3x the L2 cache (at least 1, at most `cap`).
int rotation_copies(size_t input_bytes, size_t l2_bytes, int cap);

}  // namespace pkb
