// The fp8 codes are checked exactly. The prepared inputs keep quotients away from rounding midpoints, so IEEE
// division and a multiply by the reciprocal scale must give identical codes; exact ties remain (blocks whose
// scale is a power of two), so rounding half away from zero, or truncating, must fail.
#include <gtest/gtest.h>

#include <cmath>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_019 {  // named, not anonymous: the references build as unity batches

enum class Rounding { nearest_even, half_away, truncate };

// An independent scalar float -> e4m3fn encoder (saturating) with a selectable rounding rule.
uint8_t encode(float q, Rounding mode) {
  double a = std::min(std::fabs(static_cast<double>(q)), 448.0);
  int e;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  double step = std::ldexp(1.0, std::max(e - 1, -6) - 3);
  double k = a / step;
  k = mode == Rounding::nearest_even ? std::nearbyint(k) : mode == Rounding::half_away ? std::round(k) : std::trunc(k);
  double r = k * step;
  int code;
  if (r < std::ldexp(1.0, -6)) {
    code = static_cast<int>(r / std::ldexp(1.0, -9));
  } else {
    int re;
    double m = std::frexp(r, &re);  // r = m * 2^re, m in [0.5, 1)
    code = (re - 1 + 7) * 8 + static_cast<int>((m * 2 - 1) * 8);
  }
  return static_cast<uint8_t>(code | (std::signbit(q) ? 0x80 : 0));
}

struct Fp8Case {
  pkb::ProblemSpec spec = pkb::load_problem(pkb::repo_root() / "problems/019_blocked_fp8_quantize");
  pkb::RunShape run;
  std::vector<pkb::Tensors> in, expected;

  Fp8Case(int world, int trial) : run(pkb::resolve_run(spec, world, pkb::DType::bf16)) {
    for (int r = 0; r < world; ++r) in.push_back(pkb::make_inputs(spec, run, r, trial, 1).tensors);
    expected = pkb::expected_outputs(spec, run, in);
  }

  // Quantises every rank in fp32 with the given formulation and checks the gathered codes and scales.
  bool passes(bool reciprocal, Rounding mode) const {
    std::vector<at::Tensor> ys, ss;
    for (const auto& r : in) {
      at::Tensor x = r[0].to(at::kFloat).contiguous();
      at::Tensor y = at::empty(x.sizes(), at::kByte), s = at::empty({x.size(0), x.size(1) / 128}, at::kFloat);
      const float* xp = x.data_ptr<float>();
      for (int64_t b = 0; b < x.numel() / 128; ++b) {
        float amax = 0;
        for (int i = 0; i < 128; ++i) amax = std::max(amax, std::fabs(xp[b * 128 + i]));
        float scale = reciprocal ? amax * (1.0f / 448.0f) : amax / 448.0f;
        float div = scale == 0 ? 1.0f : scale, inv = 1.0f / div;
        s.data_ptr<float>()[b] = scale;
        for (int i = 0; i < 128; ++i) {
          float q = reciprocal ? xp[b * 128 + i] * inv : xp[b * 128 + i] / div;
          y.data_ptr<uint8_t>()[b * 128 + i] = encode(q, mode);
        }
      }
      ys.push_back(y);
      ss.push_back(s);
    }
    return pkb::compare(pkb::Policy::robust, at::cat(ys), expected[0][0], spec.tolerance, at::kByte).pass &&
           pkb::compare(pkb::Policy::robust, at::cat(ss), expected[0][1], spec.tolerance, at::kFloat).pass;
  }
};

TEST(BlockedFp8QuantizeCheck, DivisionAndReciprocalMultiplyBothPass) {
  for (int trial = 0; trial < 3; ++trial) {
    Fp8Case c(2, trial);
    EXPECT_TRUE(c.passes(/*reciprocal=*/false, Rounding::nearest_even)) << "trial " << trial;
    EXPECT_TRUE(c.passes(/*reciprocal=*/true, Rounding::nearest_even)) << "trial " << trial;
  }
}

TEST(BlockedFp8QuantizeCheck, OtherRoundingRulesFail) {
  Fp8Case c(2, 0);
  EXPECT_FALSE(c.passes(false, Rounding::half_away)) << "exact ties must round to even";
  EXPECT_FALSE(c.passes(false, Rounding::truncate));
}

TEST(BlockedFp8QuantizeCheck, PrepareMovesFewElementsAndKeepsTheScales) {
  auto spec = pkb::load_problem(pkb::repo_root() / "problems/019_blocked_fp8_quantize");
  auto run = pkb::resolve_run(spec, 1, pkb::DType::bf16);
  pkb::ProblemSpec unprepared = spec;
  unprepared.slug = "019-without-prepare";  // no registered prepare: make_inputs returns the raw draws
  at::Tensor raw = pkb::make_inputs(unprepared, run, 0, 0, 1).tensors[0].to(at::kFloat);
  at::Tensor prepared = pkb::make_inputs(spec, run, 0, 0, 1).tensors[0].to(at::kFloat);
  int64_t moved = raw.ne(prepared).sum().item<int64_t>();
  EXPECT_GT(moved, 0);
  EXPECT_LT(moved, raw.numel() / 100);  // about 0.5%: ratios of 8-bit bf16 values often land exactly on a midpoint
  EXPECT_TRUE(prepared.abs().le(raw.abs()).all().item<bool>()) << "moves are toward zero";
  EXPECT_TRUE(raw.abs().reshape({-1, 128}).amax(1).equal(prepared.abs().reshape({-1, 128}).amax(1)))
      << "block maxima, hence the scales, are unchanged";
}

}  // namespace check_019
