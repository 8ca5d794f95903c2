// Problem 13 is bf16-order fragile under PKB's check: each rank's product (std ~22.6) is rounded to bf16 and NCCL
// adds the products in bf16, so honest kernels disagree with the reference on near-zero sums. Our check compares
// with a float64 oracle under the robust policy; these tests show it accepts honest kernels (fp32 accumulation,
// or either bf16 order) and rejects wrong ones.
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_013 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "013_gemm_allreduce";  // inputs {A_local, B_local}, output {out}

at::Tensor product32(const Case& c, int a_rank, int b_rank) {
  return at::mm(c.inputs[a_rank][0].to(at::kFloat), c.inputs[b_rank][1].to(at::kFloat));
}

TEST(GemmAllreduceCheck, Fp32AccumulatingKernelPasses) {
  for (int world : {2, 4}) {
    Case c = make_case(kProblem, world);
    at::Tensor sum = at::zeros_like(product32(c, 0, 0));
    for (int q = 0; q < world; ++q) sum += product32(c, q, q);
    EXPECT_TRUE(passes(c, 0, 0, sum.to(at::kBFloat16))) << "W=" << world;
  }
}

TEST(GemmAllreduceCheck, EitherBf16SummationOrderPassesThoughPkbsCheckSplitsThem) {
  Case c = make_case(kProblem, 4);
  std::vector<at::Tensor> products;  // bf16, as the reference rounds them
  for (int q = 0; q < 4; ++q) products.push_back(at::mm(c.inputs[q][0], c.inputs[q][1]));
  at::Tensor forward = ((products[0] + products[1]) + products[2]) + products[3];
  at::Tensor reversed = ((products[3] + products[2]) + products[1]) + products[0];
  EXPECT_TRUE(passes(c, 0, 0, forward));
  EXPECT_TRUE(passes(c, 0, 0, reversed));
  EXPECT_GT(pkb::compare(pkb::Policy::paper_allclose, reversed, forward, c.spec.tolerance, at::kBFloat16).mismatches,
            0);
}

TEST(GemmAllreduceCheck, WrongKernelsFail) {
  for (int world : {2, 4}) {
    Case c = make_case(kProblem, world, {.small = true});  // a wrong sum is wrong at any shape; CI's are cheaper
    at::Tensor missing = at::zeros_like(product32(c, 0, 0)), mixed = at::zeros_like(missing);
    for (int q = 0; q + 1 < world; ++q) missing += product32(c, q, q);
    for (int q = 0; q < world; ++q) mixed += product32(c, q, (q + 1) % world);  // another rank's B
    EXPECT_FALSE(passes(c, 0, 0, missing.to(at::kBFloat16))) << "one rank's product missing, W=" << world;
    EXPECT_FALSE(passes(c, 0, 0, mixed.to(at::kBFloat16))) << "operands of different ranks, W=" << world;
    EXPECT_FALSE(passes(c, 0, 0, product32(c, 0, 0).to(at::kBFloat16))) << "no reduction, W=" << world;
  }
}

}  // namespace check_013
