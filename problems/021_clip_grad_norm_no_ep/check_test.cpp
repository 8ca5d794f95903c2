// PKB never checks the clipped gradients, and at ~2e-4 they sit far below its atol = 1e-2. Here they are outputs
// checked with atol = 0: wrong ones must fail, correctly rounded ones (fp32 or bf16 coefficient) must pass.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_021 {  // named, not anonymous: the references build as unity batches

struct ClipCase {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/021_clip_grad_norm_no_ep");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;

  ClipCase(int world, int trial) : run(pkb::resolve_run(spec, world, pkb::DType::bf16)) {
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, trial, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }
  // fp32 sum of squares over the given ranks' gradients.
  float sum_sq(const std::vector<int>& ranks) const {
    float s = 0;
    for (int r : ranks)
      for (const auto& g : in[r]) s += g.to(at::kFloat).pow(2).sum().item<float>();
    return s;
  }
  bool passes(int r, const pkb::Tensors& outs, const pkb::Tolerance& tol) const {
    for (size_t i = 0; i < outs.size(); ++i)
      if (!pkb::compare(pkb::Policy::robust, outs[i], expected[r][i], tol, i == 0 ? at::kFloat : at::kBFloat16).pass)
        return false;
    return true;
  }
  bool passes(int r, const pkb::Tensors& outs) const { return passes(r, outs, spec.tolerance); }
};

pkb::Tensors clip(const pkb::Tensors& grads, float norm, bool bf16_coef = false) {
  at::Tensor coef = at::scalar_tensor(std::min(1.0f / norm, 1.0f), at::kFloat);
  if (bf16_coef) coef = coef.to(at::kBFloat16).to(at::kFloat);
  pkb::Tensors out = {at::scalar_tensor(norm, at::kFloat)};
  for (const auto& g : grads) out.push_back((g.to(at::kFloat) * coef).to(at::kBFloat16));
  return out;
}

TEST(ClipGradNormNoEpCheck, CorrectlyRoundedOutputsPass) {
  ClipCase c(4, 0);
  float norm = std::sqrt(c.sum_sq({0, 1, 2, 3}));
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(c.passes(r, clip(c.in[r], norm))) << "rank " << r;
    EXPECT_TRUE(c.passes(r, clip(c.in[r], norm, /*bf16_coef=*/true))) << "rank " << r << ", coefficient in bf16";
  }
}

TEST(ClipGradNormNoEpCheck, WrongOutputsFail) {
  ClipCase c(4, 0);
  float norm = std::sqrt(c.sum_sq({0, 1, 2, 3}));
  pkb::Tensors good = clip(c.in[1], norm);

  pkb::Tensors zeros = good;
  for (size_t i = 1; i < zeros.size(); ++i) zeros[i] = at::zeros_like(zeros[i]);
  EXPECT_FALSE(c.passes(1, zeros)) << "all-zero gradients";

  pkb::Tensors unclipped = good;
  for (size_t i = 1; i < unclipped.size(); ++i) unclipped[i] = c.in[1][i - 1].clone();
  EXPECT_FALSE(c.passes(1, unclipped)) << "gradients left unclipped";

  EXPECT_FALSE(c.passes(1, clip(c.in[1], std::sqrt(c.sum_sq({1}))))) << "local norm, no all-reduce";

  // A single flipped element is far inside PKB's atol; atol = 0 catches it.
  pkb::Tensors one_bad = good;
  one_bad[2] = good[2].clone();
  one_bad[2].view(-1)[12345].mul_(-1);
  EXPECT_FALSE(c.passes(1, one_bad)) << "one element with the wrong sign";
  EXPECT_TRUE(c.passes(1, one_bad, pkb::Tolerance{})) << "which the default atol = 1e-2 would let through";
}

}  // namespace check_021
