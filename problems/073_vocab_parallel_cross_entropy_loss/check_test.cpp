// Problem 73: at the full shape (loss 4-9, bf16 spacing 0.03-0.06) an fp32-accurate kernel rounded once and the
// bf16-stepwise reference both pass the robust check; a local log-sum-exp (no cross-rank sum of exp) and a kernel
// that drops the target logit on non-owner ranks fail.
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_073 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::on_every_rank;
using pkb::check_test::passes;

constexpr const char* kProblem = "073_vocab_parallel_cross_entropy_loss";

at::Tensor logits_fp32(const Case& c) {
  std::vector<at::Tensor> s;
  for (const auto& r : c.inputs) s.push_back(r[0].to(at::kFloat));
  return at::cat(s, -1);
}

enum class Kernel { fp32, local_lse, owner_only_target };

// A single-process kernel computing rank 0's loss.
at::Tensor kernel(const Case& c, Kernel k) {
  at::Tensor logits = logits_fp32(c), target = c.inputs[0][1];
  at::Tensor z = logits.gather(-1, target.unsqueeze(-1)).squeeze(-1);
  const int64_t vl = c.inputs[0][0].size(2);
  if (k == Kernel::local_lse) return (logits.slice(-1, 0, vl).logsumexp(-1) - z).to(at::kBFloat16);
  if (k == Kernel::owner_only_target) z = z.masked_fill(target.ge(vl), 0);
  return (logits.logsumexp(-1) - z).to(at::kBFloat16);
}

TEST(Problem073, Fp32AndStepwisePassMistakesFail) {
  Case c = make_case(kProblem, 4);
  EXPECT_TRUE(passes(c, on_every_rank(c, {kernel(c, Kernel::fp32)})));
  // The bf16-stepwise semantics (what reference.cpp computes), done in one process: a bf16 sum of the four ranks'
  // rounded local sums.
  at::Tensor m = logits_fp32(c).amax(-1, true).to(at::kBFloat16);
  at::Tensor sum = at::zeros({c.inputs[0][0].size(0), c.inputs[0][0].size(1)}, at::kBFloat16),
             pred = at::zeros_like(sum);
  for (int r = 0; r < 4; ++r) {
    at::Tensor shifted = c.inputs[r][0] - m;
    sum = sum + shifted.exp().sum(-1, false, at::kFloat).to(at::kBFloat16);
    const int64_t vl = shifted.size(2);
    at::Tensor t = c.inputs[r][1] - r * vl, outside = t.lt(0).logical_or(t.ge(vl));
    pred = pred + shifted.gather(-1, t.masked_fill(outside, 0).unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0);
  }
  EXPECT_TRUE(passes(c, on_every_rank(c, {sum.log() - pred})));
  EXPECT_FALSE(passes(c, on_every_rank(c, {kernel(c, Kernel::local_lse)}))) << "sum of exp not all-reduced";
  EXPECT_FALSE(passes(c, on_every_rank(c, {kernel(c, Kernel::owner_only_target)}))) << "target logit only on its owner";
}

}  // namespace check_073
