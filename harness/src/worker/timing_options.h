// What a timing does: its methods' calls, repetitions and stop rule (worker/timing.h times by them).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/device_kind.h"

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

}  // namespace pkb
