// Per-problem estimates and their aggregation over the problem set, by category, and as the speedup-threshold
// curve. Reporters read a Scores; nothing here formats text. Definitions: docs/metrics.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scoring/records.h"

namespace pkb::scoring {

struct ScoreSettings {
  std::vector<int> ks = {1, 3};  // pass@k and fast_p@k for each k (clipped to n per problem)
  std::vector<double> thresholds = {0, 0.5, 0.8, 1.0, 1.25, 1.5, 2, 3, 4};  // p grid of the curve (x baseline)
  // Grow the grid past its last p until it covers the largest speedup scored (threshold_grid), so that a curve of
  // kernels far faster than the baseline does not end flat at 1. Off when the caller gave the grid (--thresholds).
  bool extend_thresholds = true;
  double headline_p = 1.0;  // the p of the per-problem fast_p@k columns: fast_1@k
  // Which timing method's speedup is scored (pkb, paper or device; records carry each measured). "": each record's own
  // (timing.method), which `pkb eval/run --timing-method` chose. SOL% stays the recorded method's.
  std::string timing_method{};
};

// With fewer than k samples the estimator is evaluated at k_used = n, a lower bound on pass@k.
struct AtK {
  int k = 0, k_used = 0;
  double value = 0;
};

// A sum and a count, so that per-problem values pool into aggregates without revisiting samples.
struct Mean {
  double sum = 0;
  int count = 0;
  void add(double x) { sum += x, ++count; }
  void merge(const Mean& o) { sum += o.sum, count += o.count; }
  std::optional<double> value() const { return count ? std::optional<double>(sum / count) : std::nullopt; }
};

struct ProblemScore {
  int id = 0;
  std::string slug, folder, category;
  int n = 0, c_robust = 0, c_pkb = 0, c_fast = 0;  // c_fast: robust-correct with speedup > headline_p
  int generation_failed = 0;                       // of the n samples, those the model never produced
  int not_evaluated = 0;                           // candidates compiled but not run: not in n
  int harness_errors = 0;  // of not_evaluated, those pkb itself failed to evaluate (harness_error: retried by pkb run)
  int contended = 0;       // correct samples judged with ranks sharing a GPU: functional only, no speedup (not fast)
  int host_drift = 0;      // correct samples whose timing's host speed differed from the baseline's (timing.host_drift)
  int below_roofline = 0;  // samples of any verdict timed below the roofline floor (timing.below_roofline): no speedup
  int shared_gpu = 0;    // samples of any verdict evaluated with ranks sharing a GPU (gpu_sharing): no speedup claimed
  bool missing = false;  // in the run's selection without any record: counts 0
  std::map<std::string, int> failures;           // failed samples (of n) by bucket: compile, ..., no_code
  std::vector<AtK> pass_robust, pass_pkb, fast;  // one per ScoreSettings::ks
  std::optional<double> best_speedup;            // over robust-correct samples (x)
  Mean log_speedup;                              // ln(speedup) over robust-correct samples
  Mean sol_candidate, sol_baseline;              // SOL fractions over robust-correct samples
  std::optional<double> geomean_speedup() const;
  // A skipped evaluation leaves the estimates over a biased subset (generation failures are always "evaluated"),
  // so such a problem is listed but kept out of every aggregate.
  bool fully_evaluated() const { return not_evaluated == 0; }
};

struct Aggregate {
  int problems = 0, without_samples = 0, samples = 0, correct = 0;  // over the problems in the means
  int generation_failed = 0;                                        // samples (in `samples`) the model never produced
  int not_evaluated = 0;                // candidates compiled but not evaluated, over every problem
  int harness_errors = 0;               // of not_evaluated, those ended by a harness error
  int contended = 0;                    // correct samples judged with ranks sharing a GPU (no speedup), in the means
  int host_drift = 0;                   // correct samples flagged timing.host_drift, in the means
  int below_roofline = 0;               // samples timed below the roofline floor (no speedup claimed), in the means
  int shared_gpu = 0;                   // samples evaluated with ranks sharing a GPU (any verdict), in the means
  int not_fully_evaluated = 0;          // problems left out of the means because some evaluation was skipped
  int missing = 0;                      // problems of the selection without any record (in `problems`, counted 0)
  std::map<std::string, int> failures;  // failed samples by bucket, over the problems in the means
  std::vector<double> pass_robust, pass_pkb, fast;  // sums of per-problem estimates: "count out of N problems"
  Mean log_speedup, sol_candidate, sol_baseline;    // pooled over every robust-correct sample
  double mean(double sum) const { return problems ? sum / problems : 0.0; }
  // The mean where some sample was evaluated; none (shown "-", never 0.000) where nothing was.
  std::optional<double> evaluated_mean(double sum) const {
    return problems && samples ? std::optional<double>(sum / problems) : std::nullopt;
  }
  std::optional<double> geomean_speedup() const;
};

struct CurvePoint {
  double p = 0;
  int k = 0;
  double value = 0;  // fast_p@k averaged over the problem set
};

// One turn of a multi-turn run (pkb run --turns): the scores of the samples as they stood after it (a sample is
// solved at turn t if any turn <= t is) and what the turn itself asked and cost.
struct TurnScore {
  int turn = 1;
  int asked = 0;                                // records of this turn: samples whose conversation reached it
  int correct = 0;                              // of those, robust-correct at this turn
  int newly_solved = 0;                         // samples first robust-correct at this turn
  int64_t input_tokens = 0, output_tokens = 0;  // over this turn's answers (tokens)
  double cost_usd = 0;                          // over this turn's answers whose cost is known
  int priced = 0;                               // answers with a known cost (of asked; failed generations included)
  Aggregate overall;                            // pass@k, fast_p@k, ... after this turn
};

// Agent mode (pkb run --agent): the scores of the samples as if each had been allowed `steps` tool calls: a sample
// that used more counts as failed (budget). Beside them, what the agents spent.
struct StepScore {
  int steps = 0;
  int solved = 0;     // samples robust-correct within `steps` tool calls
  Aggregate overall;  // pass@k, fast_p@k, ... within the budget
};

struct AgentTotals {
  int samples = 0;                              // samples with an agent record
  int64_t steps = 0;                            // tool calls over them
  int64_t input_tokens = 0, output_tokens = 0;  // over every request of every sample (tokens)
  double cost_usd = 0;                          // over the samples whose cost is known (USD)
  int priced = 0;                               // samples with a known cost
};

struct Scores {
  ScoreSettings settings;
  std::vector<ProblemScore> problems;
  std::vector<std::string> without_samples;      // folders that count as 0
  std::vector<std::string> missing;              // of those, the selection's problems without any record
  std::vector<std::string> not_fully_evaluated;  // folders left out of the aggregates and the curve
  Aggregate overall;
  std::map<std::string, Aggregate> by_category;
  std::vector<CurvePoint> curve;
  std::vector<TurnScore> turns;  // one per turn when any record is past turn 1; empty for a single-turn run
  std::vector<StepScore> steps;  // agent runs: one per step budget of the grid (step_grid); else empty
  AgentTotals agent;
  std::optional<double> largest_speedup;  // of the robust-correct samples (their best turn), if any was timed
};

// `base` (sorted) continued in steps of x1.5 then x4/3 (4, 6, 8, 12, 16, ...) until it reaches `largest`; `base`
// itself when it already does. Every p stays a short number on the axis.
std::vector<double> threshold_grid(std::vector<double> base, std::optional<double> largest);

// Problems in `loaded` with no samples (and nothing left unevaluated) count as 0 in every mean and are listed in
// without_samples; problems with a skipped evaluation are scored on their own but listed in not_fully_evaluated
// and left out of the aggregates and the curve.
// For a multi-turn run every sample counts as its best turn (records.h) and `turns` gives the curve over turns.
Scores score(const LoadedResults& loaded, const ScoreSettings& settings);

// The step budgets an agent run's table shows: 1-8 one by one, then x1.5 / x4/3 (12, 16, 24, 32, ...), and `most`.
std::vector<int> step_grid(int most);

}  // namespace pkb::scoring
