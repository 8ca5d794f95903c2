// The clipped gradients (PKB mutates them in place and never checks them) are outputs here, checked with
// atol = 0: wrong ones must fail and correctly rounded ones pass, for a power-of-two and a non-power-of-two
// ep_size.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_022 {  // named, not anonymous: the references build as unity batches

struct EpClipCase {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/022_clip_grad_norm_ep");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;
  int ep_size;

  EpClipCase(int world, int trial) : run(pkb::resolve_run(spec, world, pkb::DType::bf16)) {
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, trial, 1).tensors);
    auto ctx = pkb::oracle_context(spec, run);
    ep_size = static_cast<int>(ctx.scalar("ep_size"));
    expected = pkb::expected_outputs(spec, run, in);
  }
  at::Tensor scaled_ep(int r) const { return (in[r][1].to(at::kFloat) / ep_size).to(at::kBFloat16); }
  // Outputs of rank r for a given expert gradient and total norm.
  pkb::Tensors outputs(int r, const at::Tensor& ep, float norm) const {
    float coef = std::min(1.0f / norm, 1.0f);
    auto clip = [&](const at::Tensor& g) { return (g.to(at::kFloat) * coef).to(at::kBFloat16); };
    return {at::scalar_tensor(norm, at::kFloat), clip(in[r][0]), clip(ep)};
  }
  float norm(const std::vector<int>& expert_ranks) const {
    float s = 0;
    for (int r = 0; r < run.world; ++r) s += in[r][0].to(at::kFloat).pow(2).sum().item<float>();
    for (int r : expert_ranks) s += scaled_ep(r).to(at::kFloat).pow(2).sum().item<float>();
    return std::sqrt(s);
  }
  bool passes(int r, const pkb::Tensors& outs) const {
    for (size_t i = 0; i < outs.size(); ++i)
      if (!pkb::compare(pkb::Policy::robust, outs[i], expected[r][i], spec.tolerance,
                        i == 0 ? at::kFloat : at::kBFloat16)
               .pass)
        return false;
    return true;
  }
};

std::vector<int> all_ranks(int w) {
  std::vector<int> v;
  for (int r = 0; r < w; ++r) v.push_back(r);
  return v;
}

TEST(ClipGradNormEpCheck, CorrectlyRoundedOutputsPass) {
  for (int world : {4, 6}) {
    EpClipCase c(world, 0);
    float norm = c.norm(all_ranks(world));
    for (int r = 0; r < world; ++r) EXPECT_TRUE(c.passes(r, c.outputs(r, c.scaled_ep(r), norm))) << "W=" << world;
  }
}

TEST(ClipGradNormEpCheck, WrongOutputsFail) {
  EpClipCase c(4, 0);  // ep_size 2: EP groups {0,1}, {2,3}; EP-FSDP groups {0,2}, {1,3}
  float norm = c.norm(all_ranks(4));
  pkb::Tensors good = c.outputs(0, c.scaled_ep(0), norm);

  pkb::Tensors zeros = good;
  zeros[1] = at::zeros_like(good[1]);
  zeros[2] = at::zeros_like(good[2]);
  EXPECT_FALSE(c.passes(0, zeros)) << "all-zero gradients";

  EXPECT_FALSE(c.passes(0, c.outputs(0, c.in[0][1], norm))) << "expert gradient not divided by ep_size";
  EXPECT_FALSE(c.passes(0, c.outputs(0, c.scaled_ep(0), c.norm({0, 2})))) << "expert norm reduced over EP-FSDP only";

  pkb::Tensors unclipped = good;
  unclipped[1] = c.in[0][0].clone();
  EXPECT_FALSE(c.passes(0, unclipped)) << "non-expert gradient left unclipped";

  pkb::Tensors one_bad = good;
  one_bad[2] = good[2].clone();
  one_bad[2].view(-1)[777].mul_(-1);
  EXPECT_FALSE(c.passes(0, one_bad)) << "one element with the wrong sign";
}

}  // namespace check_022
