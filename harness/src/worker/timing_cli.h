// The timing options as command-line flags, one spelling for pkb-rank and every pkb subcommand that times.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/number_checks.h"
#include "worker/timing.h"

namespace pkb {

inline void add_timing_flags(CLI::App* cmd, TimingOptions& t, const std::string& when = "") {
  cmd->add_option("--warmup", t.warmup, "pkb method: untimed calls before timing" + when)->check(cli::kNonNegative);
  cmd->add_option("--iters", t.iters, "pkb method: timed calls per repetition" + when)->check(cli::kPositive);
  cmd->add_option("--paper-warmup", t.paper_warmup, "paper method: untimed back-to-back calls" + when)
      ->check(cli::kNonNegative);
  cmd->add_option("--paper-iters", t.paper_iters, "paper method: back-to-back timed calls per repetition" + when)
      ->check(cli::kPositive);
  cmd->add_option("--min-reps", t.min_reps, "Repetitions (a pkb and a paper block each) at least" + when)
      ->check(cli::kPositive);
  cmd->add_option("--max-reps", t.max_reps, "Repetitions at most" + when)->check(cli::kPositive);
  cmd->add_option("--ci-target", t.ci_target, "Stop when both medians' 95% CI half-widths are within this fraction")
      ->check(CLI::Range(1e-6, 0.999999));
  cmd->add_option("--timing-budget", t.budget_s, "... or after this many seconds of repetitions")
      ->check(cli::kPositive);
  cmd->add_option("--paper-warmup-budget", t.paper_warmup_budget_s,
                  "paper method: end the warm-up (chunks of 50 calls) once it ran this many seconds")
      ->check(cli::kPositive);
  cmd->add_option("--rep-gap-ms", t.rep_gap_ms,
                  "Untimed pause before each repetition after the first (then the pkb warm-up again), so that "
                  "repetitions spread over time")
      ->check(cli::kNonNegative);
  cmd->add_option("--device-iters", t.device_iters,
                  "Baselines on GPUs: calls per repetition timed behind a hold, without host dispatch (0: off)" + when)
      ->check(cli::kNonNegative);
  cmd->add_option("--timing-repeats", t.repeats, "Baselines: whole timings in a row; records each one's medians")
      ->check(cli::kPositive);
}

}  // namespace pkb
