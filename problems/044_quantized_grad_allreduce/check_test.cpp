// Problem 44's int8 codes must be exact: one code off by one moves an output by s/W, which the tolerance
// (atol = 1e-5, rtol = 4e-3) catches. The prepared inputs keep quotients away from rounding midpoints, so true
// division, a multiply by 1/s and x * 127 / a all give the same codes and pass; block 0 of every rank holds exact
// ties, so rounding half away from zero or truncating fails, as does skipping the quantisation. Raw randn would
// make the formulations disagree. Checked through check_outputs, as pkb eval does.
#include <gtest/gtest.h>

#include <cmath>

#include "check_case.h"

namespace check_044 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "044_quantized_grad_allreduce";

enum class Quotient { divide, reciprocal, times_127_over_a, none };
enum class Rounding { half_even, half_away, truncate };

// The int8 codes of one rank's gradient (none: the unquantised values, as codes * s would give them).
std::vector<float> dequantize(const at::Tensor& grad, Quotient how, Rounding rounding, int64_t block = 128) {
  at::Tensor x = grad.to(at::kFloat).contiguous();
  const float* xp = x.data_ptr<float>();
  const int64_t n = x.numel();
  std::vector<float> out(n);
  for (int64_t b0 = 0; b0 < n; b0 += block) {
    const int64_t len = std::min(block, n - b0);
    float a = 0;
    for (int64_t i = 0; i < len; ++i) a = std::max(a, std::fabs(xp[b0 + i]));
    const float s = std::max(a, 1e-8f) / 127.0f, inv = 1.0f / s;
    for (int64_t i = 0; i < len; ++i) {
      const float v = xp[b0 + i];
      if (how == Quotient::none) {
        out[b0 + i] = v;
        continue;
      }
      float q = how == Quotient::divide ? v / s : how == Quotient::reciprocal ? v * inv : v * 127.0f / a;
      float code = rounding == Rounding::half_even   ? std::nearbyint(q)
                   : rounding == Rounding::half_away ? std::round(q)
                                                     : std::trunc(q);
      out[b0 + i] = std::min(127.0f, std::max(-127.0f, code)) * s;
    }
  }
  return out;
}

std::vector<pkb::Tensors> kernel(const Case& c, Quotient how, Rounding rounding) {
  const int W = c.run.world;
  const int64_t n = c.inputs[0][0].numel();
  std::vector<double> sum(n, 0.0);
  for (const auto& r : c.inputs) {
    auto d = dequantize(r[0], how, rounding);
    for (int64_t i = 0; i < n; ++i) sum[i] += d[i];
  }
  at::Tensor out = at::empty({n}, at::kFloat);
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(sum[i] / W);
  return std::vector<pkb::Tensors>(W, pkb::Tensors{out.to(at::kBFloat16)});
}

int64_t codes_differing(const at::Tensor& grad, Quotient a, Quotient b) {
  auto da = dequantize(grad, a, Rounding::half_even), db = dequantize(grad, b, Rounding::half_even);
  int64_t n = 0;
  for (size_t i = 0; i < da.size(); ++i) n += da[i] != db[i];
  return n;
}

TEST(Problem044, EveryFormulationOfTheQuotientPassesWrongRoundingFails) {
  for (int world : {2, 4}) {
    Case c = make_case(kProblem, world, {.params = {{"NUMEL", 65536 + 100}}});
    EXPECT_TRUE(passes(c, kernel(c, Quotient::divide, Rounding::half_even))) << "W=" << world;
    EXPECT_TRUE(passes(c, kernel(c, Quotient::reciprocal, Rounding::half_even))) << "x * (1/s), W=" << world;
    EXPECT_TRUE(passes(c, kernel(c, Quotient::times_127_over_a, Rounding::half_even))) << "x * 127 / a, W=" << world;
    EXPECT_FALSE(passes(c, kernel(c, Quotient::divide, Rounding::half_away))) << "round half away from zero";
    EXPECT_FALSE(passes(c, kernel(c, Quotient::divide, Rounding::truncate))) << "truncation";
    EXPECT_FALSE(passes(c, kernel(c, Quotient::none, Rounding::half_even))) << "no quantisation";
  }
}

TEST(Problem044, PreparedInputsRemoveFormulationDependentCodes) {
  Case c = make_case(kProblem, 2);
  at::manual_seed(44);
  at::Tensor raw = at::randn({1 << 20}).to(at::kBFloat16);
  EXPECT_GT(codes_differing(raw, Quotient::divide, Quotient::reciprocal), 0) << "raw randn: formulations disagree";
  EXPECT_GT(codes_differing(raw, Quotient::divide, Quotient::times_127_over_a), 0);
  for (const auto& r : c.inputs) {
    EXPECT_EQ(codes_differing(r[0], Quotient::divide, Quotient::reciprocal), 0);
    EXPECT_EQ(codes_differing(r[0], Quotient::divide, Quotient::times_127_over_a), 0);
  }
}

}  // namespace check_044
