// Problem 48 is bf16-fragile under PKB's check (y ~ 5e3, rounding noise of z and of the TP partials O(10), against
// 0.01 + 0.01 |y| on small |y|): an fp32 end-to-end kernel fails PKB's allclose against the bf16 reference chain. Our
// robust check against the fp64 oracle passes it and the bf16 chain alike, and fails wrong kernels.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_048 {  // named, not anonymous: the references build as unity batches

enum class Flaw { none, no_tp_sum, fsdp_blocks_swapped, no_silu };

struct FfnCase {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/048_fsdp_and_tp");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;
  int64_t n_tp = 2, n_fsdp = 2;  // the W = 4 layout

  explicit FfnCase(int trial) : run(pkb::resolve_run(spec, 4, pkb::DType::bf16)) {
    for (int r = 0; r < 4; ++r) in.push_back(pkb::make_inputs(spec, run, r, trial, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }

  // Rank r's output computed in `dtype` (fp32: one rounding at the end; bf16: the reference's rounding points).
  at::Tensor kernel(int r, at::ScalarType dtype, Flaw flaw) const {
    int64_t tp_rank = r % n_tp;
    at::Tensor x = in[r][0].to(dtype), y = at::zeros({x.size(0), x.size(1)}, dtype);
    for (int64_t t = 0; t < n_tp; ++t) {
      if (flaw == Flaw::no_tp_sum && t != tp_rank) continue;
      std::vector<at::Tensor> w1, w2, w3;
      for (int64_t i = 0; i < n_fsdp; ++i) {
        int64_t src = (flaw == Flaw::fsdp_blocks_swapped ? n_fsdp - 1 - i : i) * n_tp + t;
        w1.push_back(in[src][1].to(dtype));
        w2.push_back(in[src][2].to(dtype));
        w3.push_back(in[i * n_tp + t][3].to(dtype));
      }
      at::Tensor x1 = at::matmul(x, at::cat(w1, 0)), x2 = at::matmul(x, at::cat(w2, 0));
      at::Tensor z = (flaw == Flaw::no_silu ? x1 : at::silu(x1)) * x2;
      y = y + at::matmul(z, at::cat(w3, 1));
    }
    return y.to(at::kBFloat16);
  }

  bool robust(int r, const at::Tensor& out) const {
    return pkb::compare(pkb::Policy::robust, out, expected[r][0], spec.tolerance, at::kBFloat16).pass;
  }
};

TEST(FsdpTpCheck, Fp32KernelPassesOursButNotPkbs) {
  FfnCase c(0);
  int64_t pkb_mismatches = 0;
  for (int r = 0; r < 4; ++r) {
    at::Tensor fp32 = c.kernel(r, at::kFloat, Flaw::none), bf16 = c.kernel(r, at::kBFloat16, Flaw::none);
    EXPECT_TRUE(c.robust(r, fp32)) << "rank " << r;
    EXPECT_TRUE(c.robust(r, bf16)) << "rank " << r;
    pkb_mismatches += pkb::compare(pkb::Policy::paper_allclose, fp32, bf16, c.spec.tolerance, at::kBFloat16).mismatches;
  }
  EXPECT_GT(pkb_mismatches, 0) << "PKB's allclose against the bf16 chain rejects the more accurate kernel";
}

TEST(FsdpTpCheck, WrongKernelsFail) {
  FfnCase c(1);
  for (Flaw flaw : {Flaw::no_tp_sum, Flaw::fsdp_blocks_swapped, Flaw::no_silu}) {
    bool any_fail = false;
    for (int r = 0; r < 4; ++r) any_fail |= !c.robust(r, c.kernel(r, at::kFloat, flaw));
    EXPECT_TRUE(any_fail) << "flaw " << static_cast<int>(flaw);
  }
}

}  // namespace check_048
