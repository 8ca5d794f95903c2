// loss_sum is a W-term all-reduce whose bf16 result depends on the summation order. With positive losses the
// check must accept the correctly rounded fp32-accumulating result and bf16 sums in any order, over many draws,
// and still reject a missing all-reduce, a wrong divisor or a dropped backward term.
#include <gtest/gtest.h>

#include <numeric>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_023 {  // named, not anonymous: the references build as unity batches

struct LossCase {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/023_grad_acc_loss");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;

  LossCase(int world, int trial) : run(pkb::resolve_run(spec, world, pkb::DType::bf16)) {
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, trial, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }
  float f(int r, int i) const { return in[r][i].to(at::kFloat).item<float>(); }
  // Every rank's three outputs, given loss_sum (already in bf16) and how to form grad_loss.
  bool passes(float loss_sum, bool divide_by_local = false, int drop_grad_term = 0) const {
    for (int r = 0; r < run.world; ++r) {
      float local = f(r, 1), global = f(r, 2), divisor = divide_by_local ? local : global;
      float t1 = f(r, 3) * local / divisor, t2 = f(r, 4) * local;
      float grad = (drop_grad_term == 1 ? 0 : t1) + (drop_grad_term == 2 ? 0 : t2);
      pkb::Tensors outs = {at::scalar_tensor(loss_sum / divisor), at::scalar_tensor(loss_sum), at::scalar_tensor(grad)};
      for (int i = 0; i < 3; ++i)
        if (!pkb::compare(pkb::Policy::robust, outs[i].to(at::kBFloat16), expected[r][i], spec.tolerance, at::kBFloat16)
                 .pass)
          return false;
    }
    return true;
  }
  // PyTorch/NCCL style: each term rounded to bf16 (the count too), partial sums rounded at every step.
  float bf16_sum(const std::vector<int>& order) const {
    auto bf = [](float x) { return static_cast<float>(c10::BFloat16(x)); };
    float s = 0;
    for (int r : order) s = bf(s + bf(f(r, 0) * bf(f(r, 1))));
    return s;
  }
  float fp32_sum() const {
    float s = 0;
    for (int r = 0; r < run.world; ++r) s += f(r, 0) * f(r, 1);
    return s;
  }
};

TEST(GradAccLossCheck, Fp32AndAnyBf16OrderPass) {
  for (int world : {2, 4, 8}) {
    std::vector<int> order(world);
    std::iota(order.begin(), order.end(), 0);
    std::vector<int> reversed(order.rbegin(), order.rend());
    for (int trial = 0; trial < 50; ++trial) {
      LossCase c(world, trial);
      EXPECT_TRUE(c.passes(c.fp32_sum())) << "W=" << world << " trial " << trial;
      EXPECT_TRUE(c.passes(c.bf16_sum(order))) << "W=" << world << " trial " << trial;
      EXPECT_TRUE(c.passes(c.bf16_sum(reversed))) << "W=" << world << " trial " << trial;
    }
  }
}

TEST(GradAccLossCheck, WrongOutputsFail) {
  for (int world : {2, 4, 8}) {
    for (int trial = 0; trial < 20; ++trial) {
      LossCase c(world, trial);
      EXPECT_FALSE(c.passes(c.f(0, 0) * c.f(0, 1))) << "no all-reduce, W=" << world << " trial " << trial;
      EXPECT_FALSE(c.passes(c.fp32_sum(), /*divide_by_local=*/true)) << "local divisor, W=" << world;
      if (world >= 4) {  // both backward terms are >= 5% of grad_loss at W >= 4 (see problem.json)
        EXPECT_FALSE(c.passes(c.fp32_sum(), false, 1)) << "dropped first backward term, W=" << world;
        EXPECT_FALSE(c.passes(c.fp32_sum(), false, 2)) << "dropped second backward term, W=" << world;
      }
    }
  }
}

}  // namespace check_023
