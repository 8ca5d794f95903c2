// Statistics of a timing's samples and the repetitions' stop rule.
#pragma once

#include <utility>
#include <vector>

#include "worker/timing_options.h"

namespace pkb {

// Summary of a sample of times (µs): median and IQR, and the median's 95% confidence interval from order
// statistics (distribution-free; below 6 values it is [min, max]).
struct SampleStats {
  int n = 0;
  double median = 0, q25 = 0, q75 = 0, mean = 0, min = 0, max = 0, stddev = 0, cv = 0, ci_low = 0, ci_high = 0;
  double ci_half_rel() const { return median > 0 ? (ci_high - ci_low) / (2 * median) : 0; }
};
SampleStats summarize(std::vector<double> v);
// The median over the values marked fresh of each one over the mean of its nearest unmarked neighbours (before and
// after, in order); 0 where no fresh value has a neighbour (TimingStats::fresh_to_neighbours says why).
double fresh_to_neighbours(const std::vector<double>& values, const std::vector<bool>& is_fresh);
// Quantile q in [0, 1] of sorted values, linear between order statistics.
double quantile_sorted(const std::vector<double>& sorted, double q);
// 1-based ranks (lo, hi) of the order statistics bounding the median's 95% interval among n values.
std::pair<int, int> median_ci_ranks(int n);

// The stop rule after `reps` repetitions: done when at least min_reps ran and both medians' CIs are within
// the target, or the budget is spent (at least one repetition), or max_reps ran.
bool repetitions_done(const TimingOptions& o, int reps, const SampleStats& pkb, const SampleStats& paper,
                      double elapsed_s);

}  // namespace pkb
