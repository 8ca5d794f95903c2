// Problem 9 is bf16-order fragile under PKB's check: each rank's d_beta partial (std ~32) is rounded to bf16 and
// NCCL adds the partials in bf16, so two honest summation orders disagree by far more than 1e-2 on near-zero sums.
// Our check compares with a float64 oracle under the robust policy; these tests show it accepts honest kernels
// (fp32 accumulation, or either bf16 order) and rejects wrong ones.
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_009 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "009_layernorm_backward";  // inputs {X_hat, dY}, outputs {d_gamma, d_beta}

// A fused kernel: products and all sums in fp32 over the ranks in `ranks`, rounded once to bf16.
std::pair<at::Tensor, at::Tensor> fp32_kernel(const Case& c, const std::vector<int>& ranks) {
  at::Tensor g = at::zeros({c.inputs[0][1].size(1)}, at::kFloat), b = at::zeros_like(g);
  for (int r : ranks) {
    at::Tensor x = c.inputs[r][0].to(at::kFloat), dy = c.inputs[r][1].to(at::kFloat);
    g += (x * dy).sum(0);
    b += dy.sum(0);
  }
  return {g.to(at::kBFloat16), b.to(at::kBFloat16)};
}

std::vector<int> all_ranks(const Case& c) {
  std::vector<int> r;
  for (int q = 0; q < static_cast<int>(c.inputs.size()); ++q) r.push_back(q);
  return r;
}

// PKB's reference arithmetic: bf16 per-rank d_beta partials added pairwise in bf16, in the given rank order.
at::Tensor bf16_chain_d_beta(const Case& c, const std::vector<int>& order) {
  at::Tensor acc = c.inputs[order[0]][1].sum(0);
  for (size_t i = 1; i < order.size(); ++i) acc = acc + c.inputs[order[i]][1].sum(0);
  return acc;
}

TEST(LayernormBackwardCheck, Fp32AccumulatingKernelPasses) {
  for (int world : {2, 4, 8}) {
    for (int trial : {0, 1}) {
      Case c = make_case(kProblem, world, {.trial = trial});
      auto [g, b] = fp32_kernel(c, all_ranks(c));
      EXPECT_TRUE(passes(c, 0, 0, g)) << "d_gamma W=" << world << " trial " << trial;
      EXPECT_TRUE(passes(c, 0, 1, b)) << "d_beta W=" << world << " trial " << trial;
    }
  }
}

TEST(LayernormBackwardCheck, EitherBf16SummationOrderPassesThoughPkbsCheckSplitsThem) {
  Case c = make_case(kProblem, 8);
  std::vector<int> forward = all_ranks(c), reversed(forward.rbegin(), forward.rend());
  at::Tensor f = bf16_chain_d_beta(c, forward), r = bf16_chain_d_beta(c, reversed);
  EXPECT_TRUE(passes(c, 0, 1, f));
  EXPECT_TRUE(passes(c, 0, 1, r));
  // Under PKB's allclose one honest order fails against the other: the reason we check against the oracle.
  pkb::Comparison pkb_check = pkb::compare(pkb::Policy::paper_allclose, r, f, c.spec.tolerance, at::kBFloat16);
  EXPECT_GT(pkb_check.mismatches, 0);
}

TEST(LayernormBackwardCheck, WrongKernelsFail) {
  for (int world : {2, 8}) {
    Case c = make_case(kProblem, world);
    std::vector<int> missing_last = all_ranks(c);
    missing_last.pop_back();
    auto [g_missing, b_missing] = fp32_kernel(c, missing_last);
    EXPECT_FALSE(passes(c, 0, 0, g_missing)) << "d_gamma without the last rank, W=" << world;
    EXPECT_FALSE(passes(c, 0, 1, b_missing)) << "d_beta without the last rank, W=" << world;

    auto [g, b] = fp32_kernel(c, all_ranks(c));
    EXPECT_FALSE(passes(c, 0, 0, b)) << "outputs swapped, W=" << world;
    EXPECT_FALSE(passes(c, 0, 1, g)) << "outputs swapped, W=" << world;
    EXPECT_FALSE(passes(c, 0, 0, (g.to(at::kFloat) / world).to(at::kBFloat16))) << "mean instead of sum, W=" << world;
    EXPECT_FALSE(passes(c, 0, 1, (b.to(at::kFloat) / world).to(at::kBFloat16))) << "mean instead of sum, W=" << world;
  }
}

}  // namespace check_009
