// Problem 47: the Adam update (~1e-3) is below one bf16 ulp of most parameters, so the parameter output alone cannot
// tell a correct step from a skipped one. These tests show that (a skipped step passes the parameter comparison),
// that the checked `update` and moments fail a skipped step, a missing bias correction and an unaveraged gradient,
// and that an fp32-accumulating step passes every output.
#include <gtest/gtest.h>

#include <cmath>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_047 {  // named, not anonymous: the references build as unity batches

struct StepCase {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/047_fsdp_step_e2e");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;

  StepCase(int world, int trial) : run(pkb::resolve_run(spec, world, pkb::DType::bf16)) {
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, trial, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }

  bool passes(int rank, int output, const at::Tensor& got) const {
    return pkb::compare(pkb::Policy::robust, got.to(at::kBFloat16), expected[rank][output], spec.tolerance,
                        at::kBFloat16)
        .pass;
  }
};

enum class Flaw { none, skip_update, no_bias_correction, gradient_not_averaged };

// A kernel's four outputs per rank, in fp32 (full-batch gradient in fp32, then Adam in fp32), with one flaw.
std::vector<pkb::Tensors> kernel(const StepCase& c, Flaw flaw) {
  int64_t hidden = 512, d_in = 256, d_out = 256, step = 1;
  std::vector<at::Tensor> xs, ys, shards;
  for (const auto& r : c.in) {
    xs.push_back(r[0].to(at::kFloat));
    ys.push_back(r[1].to(at::kFloat));
    shards.push_back(r[2].to(at::kFloat));
  }
  at::Tensor flat = at::cat(shards);
  auto p = flat.split_with_sizes({hidden * d_in, hidden, d_out * hidden, d_out});
  at::Tensor w1 = p[0].view({hidden, d_in}), w2 = p[2].view({d_out, hidden});
  at::Tensor grad = at::zeros_like(flat);
  for (size_t r = 0; r < xs.size(); ++r) {  // per-rank gradients, summed
    at::Tensor pre = at::addmm(p[1], xs[r], w1.t()), h = at::relu(pre);
    at::Tensor dout = 2 * (at::addmm(p[3], h, w2.t()) - ys[r]) / static_cast<double>(ys[r].numel());
    at::Tensor dpre = at::mm(dout, w2) * (pre > 0).to(at::kFloat);
    grad += at::cat({at::mm(dpre.t(), xs[r]).reshape(-1), dpre.sum(0), at::mm(dout.t(), h).reshape(-1), dout.sum(0)});
  }
  if (flaw != Flaw::gradient_not_averaged) grad /= static_cast<double>(xs.size());
  double bc1 = flaw == Flaw::no_bias_correction ? 1 : 1 - std::pow(0.9, step);
  double bc2 = flaw == Flaw::no_bias_correction ? 1 : 1 - std::pow(0.999, step);
  std::vector<pkb::Tensors> out;
  int64_t n = c.in[0][2].numel();
  for (size_t r = 0; r < xs.size(); ++r) {
    at::Tensor g = grad.slice(0, r * n, (r + 1) * n), theta0 = shards[r];
    at::Tensor m = 0.9 * c.in[r][3].to(at::kFloat) + 0.1 * g, v = 0.999 * c.in[r][4].to(at::kFloat) + 0.001 * g * g;
    at::Tensor update = -1e-3 * ((m / bc1) / (at::sqrt(v / bc2) + 1e-8) + 0.01 * theta0);
    if (flaw == Flaw::skip_update) update = at::zeros_like(update);
    out.push_back({theta0 + update, m, v, update});
  }
  return out;
}

bool all_pass(const StepCase& c, const std::vector<pkb::Tensors>& outs, int only_output = -1) {
  for (int r = 0; r < c.run.world; ++r)
    for (int i = 0; i < 4; ++i)
      if ((only_output < 0 || i == only_output) && !c.passes(r, i, outs[r][i])) return false;
  return true;
}

TEST(FsdpStepCheck, Fp32StepPasses) {
  for (int world : {2, 4}) {
    StepCase c(world, 0);
    EXPECT_TRUE(all_pass(c, kernel(c, Flaw::none))) << "W=" << world;
  }
}

TEST(FsdpStepCheck, ParameterOutputAloneCannotSeeASkippedStep) {
  StepCase c(2, 0);
  auto skipped = kernel(c, Flaw::skip_update);
  EXPECT_TRUE(all_pass(c, skipped, 0)) << "theta0 itself passes the parameter comparison: the update is below bf16";
  EXPECT_FALSE(all_pass(c, skipped, 3)) << "but the update output fails";
}

TEST(FsdpStepCheck, WrongStepsFail) {
  for (int world : {2, 4}) {
    StepCase c(world, 1);
    EXPECT_FALSE(all_pass(c, kernel(c, Flaw::skip_update))) << "W=" << world;
    EXPECT_FALSE(all_pass(c, kernel(c, Flaw::no_bias_correction))) << "W=" << world;
    EXPECT_FALSE(all_pass(c, kernel(c, Flaw::gradient_not_averaged))) << "W=" << world;
  }
}

}  // namespace check_047
