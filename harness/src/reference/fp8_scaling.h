// FP8 (float8_e4m3fn) delayed scaling as problems 52 and 53 use it (fp8_reduce_scatter_grads,
// fp8_allgather_params), which differ only in the collective that moves the dequantised tensor (a reduce-scatter
// of the mean, an all-gather): the reference's quantise/dequantise round trip in ATen (1.13 has no fp8 dtype), the
// oracle's fp64 round trip through a table of every e4m3 value, and the prepare that keeps quotients off fp8
// rounding midpoints and lets the history set the scale, once. Problem 19 (blocked quantisation) uses its e4m3
// constant and helpers (kFp8Max, midpoint_distance, round_to).
#pragma once

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "reference/reference.h"

namespace pkb::fp8_scaling {

// Inputs: 0 the tensor x, 1 its amax history (oldest first). Outputs: the collective's result, the shifted history.
constexpr double kFp8Max = 448.0;  // largest finite float8_e4m3fn

// fp32 -> the nearest float8_e4m3fn value (round to nearest even; |v| <= 448 here), as fp32. ATen 1.13 has no fp8
// dtype: the spacing 2^(e-3) of the binade [2^e, 2^(e+1)) (2^-9 below 2^-6) is built from the exponent bits, and
// round() on the exactly scaled value ties to even.
inline at::Tensor e4m3_values(const at::Tensor& v) {
  at::Tensor a = v.abs();
  at::Tensor e = at::div(a.view(at::kInt), 1 << 23, "floor") - 127;
  at::Tensor step = ((e.clamp_min(-6) - 3 + 127) * (1 << 23)).to(at::kInt).view(at::kFloat);
  return (at::round(a / step) * step).clamp_max(kFp8Max) * at::sign(v);
}

// Local amax into the shifted history, scale = max(history) / 448 (fp32), quantise and dequantise (rounded to dtype).
inline std::pair<at::Tensor, at::Tensor> fp8_roundtrip(const at::Tensor& x, const at::Tensor& history) {
  at::Tensor amax = x.abs().max().to(at::kFloat);
  at::Tensor shifted = at::cat({history.slice(0, 1), amax.to(history.scalar_type()).reshape({1})});
  at::Tensor scale = shifted.max().to(at::kFloat).clamp_min(1e-12) / kFp8Max;
  at::Tensor recon = (e4m3_values(x.to(at::kFloat) / scale) * scale).to(x.scalar_type());
  return {recon, shifted};
}

// ---- oracle: fp64, the nearest e4m3 value found in a table of all finite non-negative values ----

inline double nearest_e4m3(double q) {
  static const std::vector<double> table = [] {
    std::vector<double> t;
    for (int c = 0; c <= 126; ++c)
      t.push_back((c >> 3) == 0 ? std::ldexp(c & 7, -9) : std::ldexp(8 + (c & 7), (c >> 3) - 10));
    return t;
  }();
  double a = std::min(std::fabs(q), kFp8Max);
  size_t hi = std::lower_bound(table.begin(), table.end(), a) - table.begin();
  double v = table[hi];
  if (v != a) {
    double lo = table[hi - 1];
    v = a - lo < v - a ? lo : v - a < a - lo ? v : ((hi - 1) % 2 == 0 ? lo : v);  // a tie goes to the even code
  }
  return std::copysign(v, q);
}

// One rank's dequantised vector (fp64) and shifted history (fp64), from its inputs.
inline std::pair<at::Tensor, at::Tensor> roundtrip64(const Tensors& in) {
  at::Tensor x = in[0].to(at::kDouble).contiguous(), h = in[1].to(at::kDouble).contiguous();
  const double* xp = x.data_ptr<double>();
  float amax = 0;
  for (int64_t i = 0; i < x.numel(); ++i) amax = std::max(amax, static_cast<float>(std::fabs(xp[i])));
  at::Tensor shifted = at::cat({h.slice(0, 1), at::full({1}, static_cast<double>(amax), at::kDouble)});
  float scale = std::max(static_cast<float>(shifted.max().item<double>()), 1e-12f) / static_cast<float>(kFp8Max);
  at::Tensor recon = at::empty_like(x);
  double* rp = recon.data_ptr<double>();
  for (int64_t i = 0; i < x.numel(); ++i) rp[i] = nearest_e4m3(xp[i] / scale) * scale;
  return {recon, shifted};
}

// Every rank's dequantised vector and shifted history (fp64), in rank order.
inline std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> roundtrip64_ranks(const std::vector<Tensors>& in) {
  std::vector<at::Tensor> recon, history;
  for (const auto& r : in) {
    auto [x, h] = roundtrip64(r);
    recon.push_back(x);
    history.push_back(h);
  }
  return {recon, history};
}

// ---- prepare: a history that sometimes sets the scale, and quotients kept off fp8 rounding midpoints ----
// (prepare runs on the CPU right after the draws; both problems register it as it is)

inline float round_to(float v, at::ScalarType dtype) {
  return dtype == at::kBFloat16 ? static_cast<float>(c10::BFloat16(v)) : v;
}

// Distance of |q| from the nearest e4m3 rounding midpoint, relative to it; large when q saturates.
inline double midpoint_distance(double q) {
  double a = std::fabs(q);
  if (a >= kFp8Max) return 1.0;
  int e;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  double step = std::ldexp(1.0, std::max(e - 1, -6) - 3);
  double mid = (std::floor(a / step) + 0.5) * step;
  return std::fabs(a - mid) / mid;
}

inline Tensors prepare(const OracleContext&, int, Tensors raw) {
  at::ScalarType dtype = raw[0].scalar_type();
  at::Tensor x = raw[0].to(at::kFloat).contiguous(), u = raw[1].to(at::kFloat).contiguous();
  float* xp = x.data_ptr<float>();
  const float* up = u.data_ptr<float>();
  int64_t n = x.numel(), len = u.numel();
  float amax = 0;
  for (int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(xp[i]));
  // History entries around the local amax: the newest 15 exceed it about half the time (then they set the scale);
  // the oldest, which the shift drops, is often the largest of all. Where u[1] < 1/4, entry 1 is a power of two
  // times 448 above everything kept, so the scale is a power of two, quotients are exact and rounding ties occur.
  std::vector<float> h(len);
  h[0] = round_to(amax * (0.5f + 1.5f * up[0]), dtype);
  for (int64_t i = 1; i < len; ++i) h[i] = round_to(amax * (0.5f + 0.52f * up[i]), dtype);
  if (len > 1 && up[1] < 0.25f) {
    float top = std::max(amax, *std::max_element(h.begin() + 1, h.end()));
    h[1] = std::ldexp(static_cast<float>(kFp8Max), static_cast<int>(std::ceil(std::log2(top / kFp8Max))));
  }
  for (int64_t i = 0; i < len; ++i) raw[1][i] = h[i];
  // Quotients within 2^-17 of a midpoint move toward zero by a step of the dtype, so the division, a multiply by the
  // reciprocal or an fp64 quotient all round alike; with a power-of-two scale they are exact and left alone.
  for (int pass = 0; pass < 4; ++pass) {
    float a = 0;
    for (int64_t i = 0; i < n; ++i) a = std::max(a, std::fabs(xp[i]));
    float hmax = a;
    for (int64_t i = 1; i < len; ++i) hmax = std::max(hmax, h[i]);
    float scale = std::max(hmax, 1e-12f) / static_cast<float>(kFp8Max);
    int e;
    if (std::frexp(scale, &e) == 0.5f) break;
    bool moved = false;
    for (int64_t i = 0; i < n; ++i)
      while (midpoint_distance(static_cast<double>(xp[i]) / scale) <= 0x1p-17) {
        xp[i] = round_to(xp[i] * (1.0f - 1.0f / 128), dtype);
        moved = true;
      }
    if (!moved) break;  // otherwise the amax may have moved: check the scale again
  }
  raw[0] = x.to(dtype);
  return raw;
}

}  // namespace pkb::fp8_scaling
