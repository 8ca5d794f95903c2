// Problem 15 rounds the first GEMM's output and the SiLU output to bf16; PKB's check fails kernels that fuse SiLU
// into an fp32 epilogue. Our check compares with a float64 oracle under the robust policy; these tests show it
// accepts an all-fp32 kernel and rejects wrong ones, including ReLU in place of SiLU, which the check could
// barely see with PKB's N(0, 1) W1 (first-GEMM outputs of std 16, where SiLU and ReLU nearly coincide).
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_015 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "015_combined_sharded_gemms";  // inputs {x_local, W1, W2}, output {out}

enum class Act { silu, relu };

// Rows `block` of x through rank r's MLP, all in fp32 (activation on the fp32 accumulator), rounded once.
at::Tensor fp32_kernel(const Case& c, int r, int block, Act act) {
  std::vector<at::Tensor> cols;
  for (const auto& rank_inputs : c.inputs) cols.push_back(rank_inputs[0].to(at::kFloat));
  at::Tensor x = at::cat(cols, 1);
  int64_t rows = x.size(0) / static_cast<int64_t>(c.inputs.size());
  at::Tensor z = at::mm(x.slice(0, block * rows, (block + 1) * rows), c.inputs[r][1].to(at::kFloat));
  at::Tensor a = act == Act::silu ? at::silu(z) : at::relu(z);
  return at::mm(a, c.inputs[r][2].to(at::kFloat)).to(at::kBFloat16);
}

TEST(CombinedShardedGemmsCheck, Fp32KernelPasses) {
  for (int world : {1, 2, 3, 4}) {
    Case c = make_case(kProblem, world);
    for (int r = 0; r < world; ++r)
      EXPECT_TRUE(passes(c, r, 0, fp32_kernel(c, r, r, Act::silu))) << "W=" << world << " rank " << r;
  }
}

TEST(CombinedShardedGemmsCheck, WrongKernelsFail) {
  for (int world : {2, 4}) {
    Case c = make_case(kProblem, world);
    for (int r = 0; r < world; ++r) {
      EXPECT_FALSE(passes(c, r, 0, fp32_kernel(c, r, r, Act::relu))) << "ReLU for SiLU, W=" << world;
      EXPECT_FALSE(passes(c, r, 0, fp32_kernel(c, r, (r + 1) % world, Act::silu))) << "wrong rows, W=" << world;
      EXPECT_FALSE(passes(c, r, 0, fp32_kernel(c, (r + 1) % world, r, Act::silu))) << "wrong weights, W=" << world;
    }
  }
}

// Why W1 is N(0, 1/256): with PKB's N(0, 1) (W1 x 16, exact in bf16) a ReLU kernel is within the L2 bound and all
// but a handful of elements are within the elementwise bound; with ours it is off by tens of percent.
TEST(CombinedShardedGemmsCheck, ReluIsNearlyInvisibleAtPkbsWeightScale) {
  Case c = make_case(kProblem, 2);
  pkb::Comparison ours = pkb::compare(pkb::Policy::robust, fp32_kernel(c, 0, 0, Act::relu), c.expected[0][0],
                                      c.spec.tolerance, at::kBFloat16);
  EXPECT_GT(ours.rel_l2, 10 * c.spec.tolerance.max_rel_l2) << pkb::describe(ours);

  for (auto& rank_inputs : c.inputs) rank_inputs[1] = rank_inputs[1] * 16;
  c.expected = pkb::expected_outputs(c.spec, c.run, c.inputs);
  pkb::Comparison pkbs = pkb::compare(pkb::Policy::robust, fp32_kernel(c, 0, 0, Act::relu), c.expected[0][0],
                                      c.spec.tolerance, at::kBFloat16);
  EXPECT_LT(pkbs.rel_l2, c.spec.tolerance.max_rel_l2) << pkb::describe(pkbs);
  EXPECT_LT(pkbs.mismatches, 20) << pkb::describe(pkbs);
}

}  // namespace check_015
