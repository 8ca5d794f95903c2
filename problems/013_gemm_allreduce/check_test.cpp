// Problem 13 is bf16-order fragile under PKB's check: each rank's product (std ~22.6) is rounded to bf16 and NCCL
// adds the products in bf16, so honest kernels disagree with the reference on near-zero sums. Our check compares
// with a float64 oracle under the robust policy; these tests show it accepts honest kernels (fp32 accumulation,
// or either bf16 order) and rejects wrong ones.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace {

struct Case {
  pkb::ProblemSpec spec;
  std::vector<pkb::Tensors> inputs;    // [rank] = {A_local, B_local}
  std::vector<pkb::Tensors> expected;  // [rank] = {out}, from the oracle
};

Case make_case(int world, int trial) {
  Case c;
  c.spec = pkb::load_problem(pkb::repo_root() / "problems/013_gemm_allreduce");
  pkb::RunShape run = pkb::resolve_run(c.spec, world, pkb::DType::bf16);
  for (int r = 0; r < world; ++r) c.inputs.push_back(pkb::make_inputs(c.spec, run, r, trial, 1).tensors);
  c.expected = pkb::expected_outputs(c.spec, run, c.inputs);
  return c;
}

bool passes(const Case& c, const at::Tensor& out) {
  return pkb::compare(pkb::Policy::robust, out, c.expected[0][0], c.spec.tolerance, at::kBFloat16).pass;
}

at::Tensor product32(const Case& c, int a_rank, int b_rank) {
  return at::mm(c.inputs[a_rank][0].to(at::kFloat), c.inputs[b_rank][1].to(at::kFloat));
}

TEST(GemmAllreduceCheck, Fp32AccumulatingKernelPasses) {
  for (int world : {2, 4}) {
    Case c = make_case(world, 0);
    at::Tensor sum = at::zeros_like(product32(c, 0, 0));
    for (int q = 0; q < world; ++q) sum += product32(c, q, q);
    EXPECT_TRUE(passes(c, sum.to(at::kBFloat16))) << "W=" << world;
  }
}

TEST(GemmAllreduceCheck, EitherBf16SummationOrderPassesThoughPkbsCheckSplitsThem) {
  Case c = make_case(4, 0);
  std::vector<at::Tensor> products;  // bf16, as the reference rounds them
  for (int q = 0; q < 4; ++q) products.push_back(at::mm(c.inputs[q][0], c.inputs[q][1]));
  at::Tensor forward = ((products[0] + products[1]) + products[2]) + products[3];
  at::Tensor reversed = ((products[3] + products[2]) + products[1]) + products[0];
  EXPECT_TRUE(passes(c, forward));
  EXPECT_TRUE(passes(c, reversed));
  EXPECT_GT(pkb::compare(pkb::Policy::pkb, reversed, forward, c.spec.tolerance, at::kBFloat16).mismatches, 0);
}

TEST(GemmAllreduceCheck, WrongKernelsFail) {
  for (int world : {2, 4}) {
    Case c = make_case(world, 0);
    at::Tensor missing = at::zeros_like(product32(c, 0, 0)), mixed = at::zeros_like(missing);
    for (int q = 0; q + 1 < world; ++q) missing += product32(c, q, q);
    for (int q = 0; q < world; ++q) mixed += product32(c, q, (q + 1) % world);  // another rank's B
    EXPECT_FALSE(passes(c, missing.to(at::kBFloat16))) << "one rank's product missing, W=" << world;
    EXPECT_FALSE(passes(c, mixed.to(at::kBFloat16))) << "operands of different ranks, W=" << world;
    EXPECT_FALSE(passes(c, product32(c, 0, 0).to(at::kBFloat16))) << "no reduction, W=" << world;
  }
}

}  // namespace
