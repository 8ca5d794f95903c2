// Problem 52: the prepared inputs keep quotients off fp8 midpoints (unless the scale is a power of two), so a kernel
// that multiplies by 1/scale gets the same codes as the IEEE division and passes; gamma = 0 keeps one code off by a
// step visible, so truncation, half-away-from-zero rounding (on power-of-two scales), a global amax or a history whose
// oldest entry was not dropped fail.
#include <gtest/gtest.h>

#include <cmath>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_052 {  // named, not anonymous: the references build as unity batches

enum class Rounding { nearest_even, half_away, truncate };
enum class Flaw { none, reciprocal, global_amax, keep_oldest };

// An independent scalar e4m3 rounding with a selectable rule (|q| <= 448).
float e4m3(float q, Rounding mode) {
  double a = std::min(std::fabs(static_cast<double>(q)), 448.0);
  if (a == 0) return 0;
  int e;
  std::frexp(a, &e);
  double step = std::ldexp(1.0, std::max(e - 1, -6) - 3), k = a / step;
  k = mode == Rounding::nearest_even ? std::nearbyint(k) : mode == Rounding::half_away ? std::round(k) : std::trunc(k);
  return static_cast<float>(std::copysign(std::min(k * step, 448.0), static_cast<double>(q)));
}

struct Fp8Case {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/052_fp8_reduce_scatter_grads");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;

  Fp8Case(int world, int trial) : run(pkb::resolve_run(spec, world, pkb::DType::bf16)) {
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, trial, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }

  float scale_of(int r, Flaw flaw) const {
    float amax = 0;
    if (flaw == Flaw::global_amax)
      for (const auto& t : in) amax = std::max(amax, t[0].to(at::kFloat).abs().max().item<float>());
    else
      amax = in[r][0].to(at::kFloat).abs().max().item<float>();
    at::Tensor h = in[r][1].to(at::kFloat);
    float hmax = std::max(amax, h.slice(0, flaw == Flaw::keep_oldest ? 0 : 1).max().item<float>());
    return std::max(hmax, 1e-12f) / 448.0f;
  }
  bool power_of_two_scale(int r) const {
    int e;
    return std::frexp(scale_of(r, Flaw::none), &e) == 0.5f;
  }

  // Quantise every rank in fp32, reduce in fp32, compare each rank's shard (the history is right in every variant).
  bool passes(Flaw flaw, Rounding mode) const {
    int world = run.world;
    at::Tensor sum = at::zeros({in[0][0].numel()}, at::kFloat);
    for (int r = 0; r < world; ++r) {
      at::Tensor x = in[r][0].to(at::kFloat).contiguous(), recon = at::empty_like(x);
      float s = scale_of(r, flaw), inv = 1.0f / s;
      for (int64_t i = 0; i < x.numel(); ++i) {
        float xi = x.data_ptr<float>()[i];
        recon.data_ptr<float>()[i] = e4m3(flaw == Flaw::reciprocal ? xi * inv : xi / s, mode) * s;
      }
      sum += recon;
    }
    int64_t p = sum.numel() / world;
    for (int r = 0; r < world; ++r) {
      at::Tensor shard = (sum.slice(0, r * p, (r + 1) * p) / world).to(at::kBFloat16);
      if (!pkb::compare(pkb::Policy::robust, shard, expected[r][0], spec.tolerance, at::kBFloat16).pass) return false;
    }
    return true;
  }
};

TEST(Fp8ReduceScatterCheck, DivisionAndReciprocalPassWrongRoundingOrScaleFails) {
  for (int world : {2, 4}) {
    for (int trial = 0; trial < 3; ++trial) {
      Fp8Case c(world, trial);
      EXPECT_TRUE(c.passes(Flaw::none, Rounding::nearest_even)) << "W=" << world << " trial " << trial;
      EXPECT_TRUE(c.passes(Flaw::reciprocal, Rounding::nearest_even)) << "W=" << world << " trial " << trial;
      EXPECT_FALSE(c.passes(Flaw::none, Rounding::truncate)) << "W=" << world << " trial " << trial;
    }
  }
}

TEST(Fp8ReduceScatterCheck, HistoryAndAmaxMistakesFail) {
  int global_fails = 0, oldest_fails = 0, ties_seen = 0, half_away_fails = 0;
  for (int trial = 0; trial < 6; ++trial) {
    Fp8Case c(4, trial);
    global_fails += !c.passes(Flaw::global_amax, Rounding::nearest_even);
    oldest_fails += !c.passes(Flaw::keep_oldest, Rounding::nearest_even);
    bool pow2 = false;
    for (int r = 0; r < 4; ++r) pow2 |= c.power_of_two_scale(r);
    if (pow2) {
      ++ties_seen;
      half_away_fails += !c.passes(Flaw::none, Rounding::half_away);
    }
  }
  EXPECT_GE(global_fails, 3) << "a global amax changes the scale of most ranks";
  EXPECT_GE(oldest_fails, 3) << "the dropped oldest entry is often the largest";
  EXPECT_GT(ties_seen, 0) << "some rank has a power-of-two scale (exact quotients, ties)";
  EXPECT_EQ(half_away_fails, ties_seen) << "ties rounded away from zero fail";
}

}  // namespace check_052
