// The unbiased pass@k estimator of Chen et al. (2021), and fast_p@k built on it (docs/metrics.md).
#pragma once

#include <vector>

#include "scoring/records.h"

namespace pkb::scoring {

// 1 - C(n-c, k) / C(n, k): the chance that at least one of k samples drawn without replacement from n, of
// which c are correct, is correct. Throws pkb::Error unless 1 <= k <= n and 0 <= c <= n.
double pass_at_k(int n, int c, int k);

// Samples that are correct (under `policy`) and strictly faster than p times the baseline.
int count_fast(const std::vector<Sample>& samples, double p, Policy policy = Policy::robust);

// pass_at_k with c = count_fast(samples, p): fast_1@k is the paper's headline.
double fast_p_at_k(const std::vector<Sample>& samples, double p, int k, Policy policy = Policy::robust);

}  // namespace pkb::scoring
