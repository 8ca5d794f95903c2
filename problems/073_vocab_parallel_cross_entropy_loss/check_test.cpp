// Problem 73: at the full shape (loss 4-9, bf16 spacing 0.03-0.06) an fp32-accurate kernel rounded once and the
// bf16-stepwise reference both pass the robust check; a local log-sum-exp (no cross-rank sum of exp) and a kernel
// that drops the target logit on non-owner ranks fail.
#include <gtest/gtest.h>

#include "check/expected.h"
#include "check/outputs.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace {

struct Case {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/073_vocab_parallel_cross_entropy_loss");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;
  explicit Case(int world) : run(pkb::resolve_run(spec, world, pkb::DType::bf16)) {
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, 0, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }
  bool passes(const at::Tensor& loss) const {
    std::vector<pkb::Tensors> got(run.world, pkb::Tensors{loss});
    for (const auto& c : pkb::check_outputs(spec, run, pkb::Policy::robust, got, expected, true))
      if (!c.result.pass) return false;
    return true;
  }
  at::Tensor logits_fp32() const {
    std::vector<at::Tensor> s;
    for (const auto& r : in) s.push_back(r[0].to(at::kFloat));
    return at::cat(s, -1);
  }
};

enum class Kernel { fp32, local_lse, owner_only_target };

// A single-process kernel computing rank 0's loss.
at::Tensor kernel(const Case& c, Kernel k) {
  at::Tensor logits = c.logits_fp32(), target = c.in[0][1];
  at::Tensor z = logits.gather(-1, target.unsqueeze(-1)).squeeze(-1);
  const int64_t vl = c.in[0][0].size(2);
  if (k == Kernel::local_lse) return (logits.slice(-1, 0, vl).logsumexp(-1) - z).to(at::kBFloat16);
  if (k == Kernel::owner_only_target) z = z.masked_fill(target.ge(vl), 0);
  return (logits.logsumexp(-1) - z).to(at::kBFloat16);
}

TEST(Problem073, Fp32AndStepwisePassMistakesFail) {
  Case c(4);
  EXPECT_TRUE(c.passes(kernel(c, Kernel::fp32)));
  // The bf16-stepwise semantics (what reference.cpp computes), done in one process: a bf16 sum of the four ranks'
  // rounded local sums.
  at::Tensor m = c.logits_fp32().amax(-1, true).to(at::kBFloat16);
  at::Tensor sum = at::zeros({c.in[0][0].size(0), c.in[0][0].size(1)}, at::kBFloat16), pred = at::zeros_like(sum);
  for (int r = 0; r < 4; ++r) {
    at::Tensor shifted = c.in[r][0] - m;
    sum = sum + shifted.exp().sum(-1, false, at::kFloat).to(at::kBFloat16);
    const int64_t vl = shifted.size(2);
    at::Tensor t = c.in[r][1] - r * vl, outside = t.lt(0).logical_or(t.ge(vl));
    pred = pred + shifted.gather(-1, t.masked_fill(outside, 0).unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0);
  }
  EXPECT_TRUE(c.passes(sum.log() - pred));
  EXPECT_FALSE(c.passes(kernel(c, Kernel::local_lse))) << "sum of exp not all-reduced";
  EXPECT_FALSE(c.passes(kernel(c, Kernel::owner_only_target))) << "target logit only on its owner";
}

}  // namespace
