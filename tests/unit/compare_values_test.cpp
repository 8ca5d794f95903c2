// check/compare_values.cpp: compare_views widens and compares a chunk at a time; its verdict and figures must be the
// bits compare_doubles gives over the whole arrays, wherever the interesting elements fall among the chunks.
#include "check/compare_values.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

using pkb::Comparison;
using pkb::DType;

constexpr int64_t kN = 20011;  // a few chunks and a ragged last one

uint16_t bf16_bits(float f) {  // truncation: any bf16 value will do here
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return static_cast<uint16_t>(u >> 16);
}

double bf16_value(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

void expect_same(const Comparison& a, const Comparison& b) {
  EXPECT_EQ(a.pass, b.pass);
  EXPECT_EQ(a.numel, b.numel);
  EXPECT_EQ(a.mismatches, b.mismatches);
  EXPECT_EQ(a.nan_count, b.nan_count);
  EXPECT_EQ(a.first_bad, b.first_bad);
  EXPECT_EQ(a.max_abs_err, b.max_abs_err);  // bit for bit: the same sums in the same order
  EXPECT_EQ(a.max_rel_err, b.max_rel_err);
  EXPECT_EQ(a.rel_l2, b.rel_l2);
}

TEST(CompareValues, ChunkedViewsGiveTheWholeArraysVerdict) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<float> expected(kN), out(kN);
  for (int64_t i = 0; i < kN; ++i) expected[i] = out[i] = static_cast<float>(std::sin(0.01 * i) * 3);
  expected[9000] = out[9000] = static_cast<float>(inf);   // an expected inf, matched
  expected[15000] = static_cast<float>(-inf);             // an expected -inf, missed
  out[12345] += 1;                                        // off by 1, in the second chunk
  out[kN - 1] = std::numeric_limits<float>::quiet_NaN();  // the ragged last chunk
  const pkb::TensorView ov{DType::f32, {kN}, out.data()}, ev{DType::f32, {kN}, expected.data()};
  std::vector<double> o(out.begin(), out.end()), e(expected.begin(), expected.end());
  for (pkb::Policy policy : {pkb::Policy::robust, pkb::Policy::paper_allclose}) {
    Comparison chunked = pkb::compare_views(policy, ov, ev, pkb::Tolerance{}, DType::f32);
    Comparison whole = pkb::compare_doubles(policy, o.data(), e.data(), kN, pkb::Tolerance{}, false,
                                            policy == pkb::Policy::robust ? pkb::dtype_epsilon(DType::f32) : 0);
    expect_same(chunked, whole);
    EXPECT_FALSE(chunked.pass);
    EXPECT_EQ(chunked.numel, kN);
    EXPECT_EQ(chunked.mismatches, 3);  // the +1, the missed -inf, the NaN
    EXPECT_EQ(chunked.nan_count, 1);
    EXPECT_EQ(chunked.first_bad, 12345);
  }
}

// A bf16 output against fp32 expected values, within the robust slack: passes, with the whole arrays' figures.
TEST(CompareValues, MixedDtypesWidenEachSideByItsOwn) {
  std::vector<float> expected(kN);
  std::vector<uint16_t> out(kN);
  std::vector<double> o(kN), e(kN);
  for (int64_t i = 0; i < kN; ++i) {
    expected[i] = static_cast<float>(std::cos(0.003 * i));
    out[i] = bf16_bits(expected[i]);
    o[i] = bf16_value(out[i]);
    e[i] = expected[i];
  }
  const pkb::TensorView ov{DType::bf16, {kN, 1}, out.data()}, ev{DType::f32, {kN, 1}, expected.data()};
  Comparison chunked = pkb::compare_views(pkb::Policy::robust, ov, ev, pkb::Tolerance{}, DType::bf16);
  Comparison whole = pkb::compare_doubles(pkb::Policy::robust, o.data(), e.data(), kN, pkb::Tolerance{}, false,
                                          pkb::dtype_epsilon(DType::bf16));
  expect_same(chunked, whole);
  EXPECT_TRUE(chunked.pass) << pkb::describe(chunked);
  EXPECT_GT(chunked.max_abs_err, 0);
}

TEST(CompareValues, ShapesThatDifferAreAnErrorNotAComparison) {
  std::vector<float> a(6), b(6);
  Comparison c = pkb::compare_views(pkb::Policy::robust, {DType::f32, {2, 3}, a.data()}, {DType::f32, {3, 2}, b.data()},
                                    pkb::Tolerance{}, DType::f32);
  EXPECT_FALSE(c.pass);
  EXPECT_EQ(c.error, "shape [2, 3] != expected [3, 2]");
}

}  // namespace
