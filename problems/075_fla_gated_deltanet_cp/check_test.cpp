// Problem 75: the outputs are small (rms ~ 0.0025, below PKB's atol of 1e-2), so the check uses atol 1e-4: a kernel
// that never communicates and runs each rank's positions from a zero state fails; an fp32 recurrence over the whole
// sequence, rounded once, passes. At the default shapes, W = 2.
#include <gtest/gtest.h>

#include <cmath>

#include "problems/delta_rule_cp.h"

namespace check_075 {  // named, not anonymous: the references build as unity batches

// fp32 gated delta rule over (T, H, .) tensors, all heads at once: the decay is one scalar per head.
at::Tensor gdn(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor gate, at::Tensor beta, at::Tensor a_log,
               at::Tensor dt) {
  q = q.to(at::kFloat), k = k.to(at::kFloat), v = v.to(at::kFloat);
  q = q / q.norm(2, {-1}, true).clamp_min(1e-6) / std::sqrt(static_cast<double>(q.size(-1)));
  k = k / k.norm(2, {-1}, true).clamp_min(1e-6);
  at::Tensor decay = at::exp(-a_log.to(at::kFloat).exp() * at::softplus(gate.to(at::kFloat) + dt.to(at::kFloat)));
  return pkb::test::delta_rule(q, k, v, beta.to(at::kFloat), decay.unsqueeze(-1).unsqueeze(-1));
}

// a_log and dt are head-sharded: every rank's, concatenated.
std::vector<pkb::Tensors> kernel(const pkb::check_test::Case& c, bool whole_sequence) {
  std::vector<at::Tensor> a, d;
  for (const auto& r : c.inputs) a.push_back(r[5]), d.push_back(r[6]);
  at::Tensor a_log = at::cat(a), dt = at::cat(d);
  return pkb::test::cp_outputs(c, whole_sequence,
                               [&](const pkb::Tensors& s) { return gdn(s[0], s[1], s[2], s[3], s[4], a_log, dt); });
}

TEST(Problem075, SmallOutputsNeedASmallAtol) {
  pkb::check_test::Case c = pkb::check_test::make_case("075_fla_gated_deltanet_cp", 2);
  EXPECT_TRUE(pkb::check_test::passes(c, kernel(c, true)));
  EXPECT_FALSE(pkb::check_test::passes(c, kernel(c, false))) << "no communication";
}

}  // namespace check_075
