#include <cmath>

#include "reference/fp8_scaling.h"

// kFp8Max, midpoint_distance and round_to are the e4m3 helpers of harness/src/reference/fp8_scaling.h.
namespace problem_019 {  // named, not anonymous: the references build as unity batches

using namespace pkb;
using fp8_scaling::kFp8Max;
using fp8_scaling::midpoint_distance;
using fp8_scaling::round_to;

// fp32 -> float8_e4m3fn bit pattern: round to nearest even, saturating at +-448. ATen 1.13 has no float8 dtype, so
// this is spelled out with ATen ops (any device). Bit fields are read by viewing fp32 as int32; shifts are written
// as floor divisions by powers of two.
at::Tensor e4m3fn_bits(const at::Tensor& v) {
  at::Tensor a = v.abs().clamp_max(kFp8Max);
  // Spacing of e4m3 values around a: 2^(e-3) in the binade [2^e, 2^(e+1)), and 2^-9 for subnormals (a < 2^-6).
  at::Tensor e = at::div(a.view(at::kInt), 1 << 23, "floor") - 127;
  at::Tensor step = ((e.clamp_min(-6) - 3 + 127) * (1 << 23)).to(at::kInt).view(at::kFloat);
  at::Tensor r = at::round(a / step) * step;  // exact scaling by a power of two; round() ties to even
  // Encode r, now exactly representable (it may have carried into the next binade).
  at::Tensor bits = r.view(at::kInt);
  at::Tensor normal =
      (at::div(bits, 1 << 23, "floor") - 127 + 7) * 8 + at::remainder(at::div(bits, 1 << 20, "floor"), 8);
  at::Tensor subnormal = (r * 512).to(at::kInt);
  at::Tensor code = at::where(r >= 1.0 / 64, normal, subnormal) + at::signbit(v).to(at::kInt) * 128;
  return code.to(at::kByte);
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor& x = in[0];
  int64_t block = ctx.scalar("block_size"), m = x.size(0), n = x.size(1);
  at::Tensor blocks = x.to(at::kFloat).reshape({m, n / block, block});
  at::Tensor scale = blocks.abs().amax(-1) / kFp8Max;  // (M, N/block) fp32
  at::Tensor divisor = scale.masked_fill(scale == 0, 1.0);
  at::Tensor y = e4m3fn_bits(blocks / divisor.unsqueeze(-1)).reshape({m, n});

  at::Tensor y_all = at::empty({ctx.world * m, n}, y.options());
  at::Tensor s_all = at::empty({ctx.world * m, n / block}, scale.options());
  ctx.comm->all_gather(y, y_all);
  ctx.comm->all_gather(scale.contiguous(), s_all);
  return {y_all, s_all};
}

// ---- oracle: fp64 quotients, nearest e4m3 value found in a table of all finite codes ----

double e4m3_value(int code) {  // non-negative codes 0..126
  int exp = code >> 3, mant = code & 7;
  return exp == 0 ? std::ldexp(mant, -9) : std::ldexp(1.0 + mant / 8.0, exp - 7);
}

uint8_t e4m3_round(double q) {
  static const std::vector<double> table = [] {
    std::vector<double> t;
    for (int c = 0; c <= 126; ++c) t.push_back(e4m3_value(c));
    return t;
  }();
  double a = std::min(std::fabs(q), kFp8Max);
  int hi = static_cast<int>(std::lower_bound(table.begin(), table.end(), a) - table.begin());  // table[hi] >= a
  int code = hi;
  if (table[hi] != a) {
    int lo = hi - 1;
    double dlo = a - table[lo], dhi = table[hi] - a;
    code = dlo < dhi ? lo : dhi < dlo ? hi : (lo % 2 == 0 ? lo : hi);  // tie: even mantissa
  }
  return static_cast<uint8_t>(code | (std::signbit(q) ? 0x80 : 0));
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  int64_t block = ctx.scalar("block_size");
  std::vector<at::Tensor> ys, ss;
  for (const auto& r : in) {
    at::Tensor x = r[0].to(at::kDouble).contiguous();
    int64_t m = x.size(0), n = x.size(1);
    at::Tensor y = at::empty({m, n}, at::kByte), s = at::empty({m, n / block}, at::kDouble);
    const double* xp = x.data_ptr<double>();
    uint8_t* yp = y.data_ptr<uint8_t>();
    double* sp = s.data_ptr<double>();
    for (int64_t b = 0; b < m * n / block; ++b) {
      const double* xb = xp + b * block;
      double amax = 0;
      for (int64_t i = 0; i < block; ++i) amax = std::max(amax, std::fabs(xb[i]));
      sp[b] = amax / kFp8Max;
      double divisor = sp[b] == 0 ? 1.0 : sp[b];
      for (int64_t i = 0; i < block; ++i) yp[b * block + i] = e4m3_round(xb[i] / divisor);
    }
    ys.push_back(y);
    ss.push_back(s);
  }
  return std::vector<Tensors>(ctx.world, Tensors{at::cat(ys, 0), at::cat(ss, 0)});
}

// ---- prepare: keep quotients away from fp8 rounding midpoints ----

bool is_power_of_two(float s) {
  int e;
  return std::frexp(s, &e) == 0.5f;
}

// Moves x toward zero by at least one step of its dtype (2^-7 relative is one bf16 ulp or more).
float nudge(float x, at::ScalarType dtype) { return round_to(static_cast<float>(x * (1.0 - 1.0 / 128)), dtype); }

Tensors prepare(const OracleContext& ctx, int /*rank*/, Tensors raw) {
  int64_t block = ctx.scalar("block_size");
  at::ScalarType dtype = raw[0].scalar_type();
  at::Tensor x = raw[0].to(at::kFloat).contiguous();
  float* xp = x.data_ptr<float>();
  for (int64_t b = 0; b < x.numel() / block; ++b) {
    float* xb = xp + b * block;
    float amax = 0;
    for (int64_t i = 0; i < block; ++i) amax = std::max(amax, std::fabs(xb[i]));
    float s = amax / static_cast<float>(kFp8Max);
    if (s == 0 || is_power_of_two(s)) continue;  // quotients are exact: every formulation agrees, ties included
    for (int64_t i = 0; i < block; ++i)
      while (midpoint_distance(static_cast<double>(xb[i]) / s) <= 0x1p-17) xb[i] = nudge(xb[i], dtype);
  }
  raw[0] = x.to(dtype);
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("blocked_fp8_quantize", reference, oracle, prepare);

}  // namespace problem_019
