// Problem 74: the outputs are small (rms ~ 0.004, below PKB's atol of 1e-2), so the check uses atol 1e-4: a kernel that
// never communicates and runs each rank's positions from a zero state fails; an fp32 recurrence over the whole
// sequence, rounded once, passes. At the default shapes, W = 2 (CP over both ranks, no TP).
#include <gtest/gtest.h>

#include <cmath>

#include "problems/delta_rule_cp.h"

namespace check_074 {  // named, not anonymous: the references build as unity batches

// fp32 KDA over (T, H, D) tensors, all heads at once: the decay is per head and key channel.
at::Tensor kda(at::Tensor q, at::Tensor k, at::Tensor v, at::Tensor g, at::Tensor beta, at::Tensor a_log,
               at::Tensor dt) {
  q = q.to(at::kFloat), k = k.to(at::kFloat), v = v.to(at::kFloat);
  q = q / q.norm(2, {-1}, true).clamp_min(1e-12) / std::sqrt(static_cast<double>(q.size(-1)));
  k = k / k.norm(2, {-1}, true).clamp_min(1e-12);
  at::Tensor alpha = at::exp(-5 * at::sigmoid(a_log.to(at::kFloat).exp().unsqueeze(-1) *
                                              (g.to(at::kFloat) + dt.to(at::kFloat).view({a_log.size(0), -1}))));
  return pkb::test::delta_rule(q, k, v, at::sigmoid(beta.to(at::kFloat)), alpha.unsqueeze(-1));
}

// a_log and dt are replicated: rank 0's.
std::vector<pkb::Tensors> kernel(const pkb::check_test::Case& c, bool whole_sequence) {
  return pkb::test::cp_outputs(c, whole_sequence, [&](const pkb::Tensors& s) {
    return kda(s[0], s[1], s[2], s[3], s[4], c.inputs[0][5], c.inputs[0][6]);
  });
}

TEST(Problem074, SmallOutputsNeedASmallAtol) {
  pkb::check_test::Case c = pkb::check_test::make_case("074_fla_kimi_delta_attention_cp_tp", 2);
  EXPECT_TRUE(pkb::check_test::passes(c, kernel(c, true)));
  EXPECT_FALSE(pkb::check_test::passes(c, kernel(c, false))) << "no communication";
}

}  // namespace check_074
