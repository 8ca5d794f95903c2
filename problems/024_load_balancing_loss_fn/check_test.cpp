// Problem 24: with our inputs the check fails the plausible wrong answers (no all-reduce, no division by W, the
// constant 2.0 that PKB's i.i.d. logits always give) and passes an fp32-accumulating, correctly rounded loss.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_024 {  // named, not anonymous: the references build as unity batches

pkb::ProblemSpec spec() { return pkb::load_problem(pkb::repo_root() / "problems/024_load_balancing_loss_fn"); }

// Local loss of one rank in fp32 throughout (top-k from fp32 probabilities, means unrounded).
double local_loss_fp32(const at::Tensor& logits, int64_t experts, int64_t top_k) {
  at::Tensor p = at::softmax(logits.to(at::kFloat), -1);
  at::Tensor chosen = std::get<1>(p.topk(top_k, -1));
  at::Tensor f = at::one_hot(chosen, experts).to(at::kFloat).mean(0);
  return ((f * p.mean(0).unsqueeze(0)).sum() * experts).item<double>();
}

bool passes(const at::Tensor& out, const at::Tensor& expected, const pkb::ProblemSpec& s) {
  return pkb::compare(pkb::Policy::robust, out, expected, s.tolerance, at::kFloat).pass;
}

at::Tensor scalar(double v) { return at::scalar_tensor(v, at::kFloat); }

TEST(Problem024, WrongLossesFailCorrectOnePasses) {
  auto s = spec();
  const int W = 4;
  auto run = pkb::resolve_run(s, W, pkb::DType::bf16);
  for (int trial = 0; trial < 3; ++trial) {
    std::vector<pkb::Tensors> in;
    for (int r = 0; r < W; ++r) in.push_back(pkb::make_inputs(s, run, r, trial, 0).tensors);
    auto expected = pkb::expected_outputs(s, run, in);
    std::vector<double> local;
    double mean = 0;
    for (int r = 0; r < W; ++r) {
      local.push_back(local_loss_fp32(in[r][0], 8, 2));
      mean += local.back() / W;
    }
    bool local_fails_somewhere = false;
    for (int r = 0; r < W; ++r) {
      const at::Tensor& want = expected[r][0];
      EXPECT_TRUE(passes(scalar(mean), want, s)) << "fp32 loss " << mean << " vs " << want.item<double>();
      EXPECT_FALSE(passes(scalar(mean * W), want, s)) << "sum over ranks, not divided by W";
      EXPECT_FALSE(passes(scalar(2.0), want, s)) << "the constant of balanced routing";
      local_fails_somewhere |= !passes(scalar(local[r]), want, s);
    }
    EXPECT_TRUE(local_fails_somewhere) << "each rank's own loss (no all-reduce) must fail on some rank";
  }
}

// Why we deviate: with PKB's i.i.d. N(0,1) logits the loss is ~2 whatever the routing, so a constant passes.
TEST(Problem024, IidLogitsMakeAnEmptyCheck) {
  auto s = spec();
  const int W = 4;
  auto run = pkb::resolve_run(s, W, pkb::DType::bf16);
  at::manual_seed(24);
  std::vector<pkb::Tensors> in;
  for (int r = 0; r < W; ++r) in.push_back({at::randn({1024, 8}).to(at::kBFloat16)});
  auto expected = pkb::expected_outputs(s, run, in);
  EXPECT_TRUE(passes(scalar(2.0), expected[0][0], s)) << expected[0][0].item<double>();
}

}  // namespace check_024
