// The rope check must accept both bf16 rounding conventions (three roundings as PyTorch's ops do, or one fused
// fp32 rounding) and reject a wrong rotation or a wrong rank order.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_017 {  // named, not anonymous: the references build as unity batches

struct RopeCase {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/017_rope_allgather");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;

  RopeCase(int world, int trial) : run(pkb::resolve_run(spec, world, pkb::DType::bf16)) {
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, trial, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }
  // Gathered q and k built from each rank's shards by `rope`, in `order`, compared on rank 0.
  template <class F>
  bool passes(F rope, std::vector<int> order = {}, pkb::Policy policy = pkb::Policy::robust,
              const pkb::Tensors* against = nullptr) const {
    if (order.empty())
      for (int r = 0; r < run.world; ++r) order.push_back(r);
    for (int which : {0, 1}) {
      std::vector<at::Tensor> shards;
      for (int r : order) shards.push_back(rope(in[r][which], in[r][2], in[r][3]));
      at::Tensor got = at::cat(shards, 1);
      const at::Tensor& want = against ? (*against)[which] : expected[0][which];
      if (!pkb::compare(policy, got, want, spec.tolerance, at::kBFloat16).pass) return false;
    }
    return true;
  }
};

at::Tensor rotate_half(const at::Tensor& x, bool sign_bug = false) {
  int64_t h = x.size(-1) / 2;
  at::Tensor lo = x.narrow(-1, 0, h), hi = x.narrow(-1, h, h);
  return sign_bug ? at::cat({hi, -lo}, -1) : at::cat({-hi, lo}, -1);
}

// One rounding: fp32 throughout, cast once.
at::Tensor fused(const at::Tensor& x, const at::Tensor& c, const at::Tensor& s) {
  at::Tensor xf = x.to(at::kFloat);
  return (xf * c.to(at::kFloat).unsqueeze(2) + rotate_half(xf) * s.to(at::kFloat).unsqueeze(2)).to(at::kBFloat16);
}
// Three roundings: bf16 ops, as the PyTorch reference computes.
at::Tensor eager(const at::Tensor& x, const at::Tensor& c, const at::Tensor& s) {
  return x * c.unsqueeze(2) + rotate_half(x) * s.unsqueeze(2);
}

TEST(RopeAllgatherCheck, BothRoundingConventionsPass) {
  for (int trial = 0; trial < 3; ++trial) {
    RopeCase c(4, trial);
    EXPECT_TRUE(c.passes(fused)) << "trial " << trial;
    EXPECT_TRUE(c.passes(eager)) << "trial " << trial;
  }
}

TEST(RopeAllgatherCheck, PkbAllcloseAgainstTheEagerOutputRejectsTheFusedOne) {
  // Why we check against a precise oracle: PKB's allclose against the three-rounding result fails a correct
  // fused kernel on a few elements (cancellation after large products).
  int rejected = 0;
  for (int trial = 0; trial < 3; ++trial) {
    RopeCase c(4, trial);
    pkb::Tensors eager_out;
    for (int which : {0, 1}) {
      std::vector<at::Tensor> shards;
      for (int r = 0; r < 4; ++r) shards.push_back(eager(c.in[r][which], c.in[r][2], c.in[r][3]));
      eager_out.push_back(at::cat(shards, 1));
    }
    rejected += !c.passes(fused, {}, pkb::Policy::paper_allclose, &eager_out);
  }
  EXPECT_GT(rejected, 0);
}

TEST(RopeAllgatherCheck, WrongOutputsFail) {
  RopeCase c(4, 0);
  EXPECT_FALSE(c.passes([](const at::Tensor& x, const at::Tensor& co, const at::Tensor& s) {
    return (x * co.unsqueeze(2) + rotate_half(x, /*sign_bug=*/true) * s.unsqueeze(2));
  })) << "rotation with the sign on the wrong half";
  EXPECT_FALSE(c.passes(eager, {1, 0, 2, 3})) << "shards out of rank order";
  EXPECT_FALSE(c.passes([](const at::Tensor& x, const at::Tensor& co, const at::Tensor& s) { return eager(x, s, co); }))
      << "cos and sin swapped";
}

}  // namespace check_017
