// Problem 16 is bf16-order fragile under PKB's check: each rank's partial product (std ~22.6/sqrt(W)) is rounded
// to bf16 and NCCL reduce-scatters the partials in bf16. Our check compares with a float64 oracle under the robust
// policy; these tests show it accepts a kernel that accumulates all of K in fp32 (PKB's check fails about 4% of
// its elements even at W = 2) and rejects wrong ones.
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_016 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "016_gemm_reducescatter";  // inputs {A_local, B_local}, output {out}

// Row block `block` of the sum over `ranks` of A_q B_q, accumulated in fp32 (a GEMM over the gathered K).
at::Tensor fp32_rows(const Case& c, const std::vector<int>& ranks, int block) {
  int64_t rows = c.inputs[0][0].size(0) / static_cast<int64_t>(c.inputs.size());
  at::Tensor sum;
  for (int q : ranks) {
    at::Tensor p =
        at::mm(c.inputs[q][0].slice(0, block * rows, (block + 1) * rows).to(at::kFloat), c.inputs[q][1].to(at::kFloat));
    sum = sum.defined() ? sum + p : p;
  }
  return sum.to(at::kBFloat16);
}

TEST(GemmReducescatterCheck, Fp32AccumulatingKernelPasses) {
  for (int world : {2, 4}) {
    Case c = make_case(kProblem, world);
    std::vector<int> all;
    for (int q = 0; q < world; ++q) all.push_back(q);
    for (int r = 0; r < world; ++r)
      EXPECT_TRUE(passes(c, r, 0, fp32_rows(c, all, r))) << "W=" << world << " rank " << r;
  }
}

TEST(GemmReducescatterCheck, WrongKernelsFail) {
  for (int world : {2, 4}) {
    Case c = make_case(kProblem, world);
    std::vector<int> all, missing;
    for (int q = 0; q < world; ++q) all.push_back(q);
    for (int q = 0; q + 1 < world; ++q) missing.push_back(q);
    for (int r = 0; r < world; ++r) {
      EXPECT_FALSE(passes(c, r, 0, fp32_rows(c, all, (r + 1) % world))) << "another rank's row block, W=" << world;
      EXPECT_FALSE(passes(c, r, 0, fp32_rows(c, missing, r))) << "one rank's partial missing, W=" << world;
      EXPECT_FALSE(passes(c, r, 0, fp32_rows(c, {r}, r))) << "no reduction, W=" << world;
    }
  }
}

}  // namespace check_016
