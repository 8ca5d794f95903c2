#include "scoring/estimators.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace pkb::scoring {

double pass_at_k(int n, int c, int k) {
  if (k < 1 || k > n || c < 0 || c > n)
    throw Error("pass@k needs 1 <= k <= n and 0 <= c <= n (n=" + std::to_string(n) + ", c=" + std::to_string(c) +
                ", k=" + std::to_string(k) + ")");
  if (c == 0) return 0.0;
  if (n - c < k) return 1.0;  // every draw of k contains a correct sample
  // C(n-c,k)/C(n,k) = prod_{i=n-c+1..n} (1 - k/i): no factorials, so no overflow and no cancellation at large n.
  double miss = 1.0;
  for (int i = n - c + 1; i <= n; ++i) miss *= 1.0 - static_cast<double>(k) / i;
  return 1.0 - miss;
}

int count_fast(const std::vector<Sample>& samples, double p, Policy policy) {
  return static_cast<int>(std::count_if(samples.begin(), samples.end(), [&](const Sample& s) {
    return s.correct(policy) && s.speedup && *s.speedup > p;
  }));
}

double fast_p_at_k(const std::vector<Sample>& samples, double p, int k, Policy policy) {
  return pass_at_k(static_cast<int>(samples.size()), count_fast(samples, p, policy), k);
}

}  // namespace pkb::scoring
