#include "reference/reference.h"

#include <cmath>

namespace problem_044 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor& grad = in[0];
  const int64_t block = ctx.scalar("block_size"), n = grad.numel(), padded = (n + block - 1) / block * block;
  at::Tensor x = at::zeros({padded}, grad.options().dtype(at::kFloat));
  x.narrow(0, 0, n).copy_(grad);
  at::Tensor blocks = x.view({-1, block});
  at::Tensor scale = std::get<0>(blocks.abs().max(1, true)).clamp_min(1e-8) / 127.0;
  at::Tensor q = at::round(blocks / scale).clamp(-127, 127).to(at::kChar);  // round() is half to even
  at::Tensor dequantized = (q.to(at::kFloat) * scale).view(-1);
  ctx.comm->all_reduce(dequantized, ReduceOp::sum);
  return {(dequantized / ctx.world).narrow(0, 0, n).to(grad.scalar_type())};
}

// Per element in double: the code from the fp32 quotient (as the spec defines it), the sum over ranks in double.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int64_t block = ctx.scalar("block_size"), n = in[0][0].numel();
  std::vector<double> sum(n, 0.0);
  for (const auto& r : in) {
    at::Tensor x = r[0].to(at::kFloat).contiguous();
    const float* xp = x.data_ptr<float>();
    for (int64_t b0 = 0; b0 < n; b0 += block) {
      const int64_t len = std::min(block, n - b0);
      float a = 0;
      for (int64_t i = 0; i < len; ++i) a = std::max(a, std::fabs(xp[b0 + i]));
      const float s = std::max(a, 1e-8f) / 127.0f;
      for (int64_t i = 0; i < len; ++i) {
        double code = std::nearbyint(static_cast<double>(xp[b0 + i] / s));  // default rounding mode: half to even
        sum[b0 + i] += std::min(127.0, std::max(-127.0, code)) * static_cast<double>(s);
      }
    }
  }
  at::Tensor out = at::empty({n}, at::kDouble);
  for (int64_t i = 0; i < n; ++i) out[i] = sum[i] / ctx.world;
  return std::vector<Tensors>(ctx.world, Tensors{out});
}

bool is_power_of_two(float s) {
  int e;
  return std::frexp(s, &e) == 0.5f;
}

// Distance of |q| from the nearest midpoint k + 1/2, relative to |q|.
double midpoint_distance(double q) {
  double a = std::fabs(q);
  return a == 0 ? 1.0 : std::fabs(a - (std::floor(a) + 0.5)) / a;
}

float to_dtype(double v, at::ScalarType dtype) {
  float f = static_cast<float>(v);
  return dtype == at::kBFloat16 ? static_cast<float>(c10::BFloat16(f)) : f;
}

// Block 0 gets a power-of-two scale and two exact ties; elsewhere quotients near a midpoint are moved away.
Tensors prepare(const OracleContext& ctx, int /*rank*/, Tensors raw) {
  const int64_t block = ctx.scalar("block_size");
  const at::ScalarType dtype = raw[0].scalar_type();
  at::Tensor x = raw[0].to(at::kFloat).contiguous();
  float* xp = x.data_ptr<float>();
  const int64_t n = x.numel();
  if (std::min(block, n) >= 4) {
    int64_t arg = 0;
    for (int64_t i = 1; i < std::min(block, n); ++i)
      if (std::fabs(xp[i]) > std::fabs(xp[arg])) arg = i;
    int e;
    std::frexp(xp[arg], &e);  // |max| in [2^(e-1), 2^e) becomes 1.984375 * 2^(e-1), or 2^e if that is smaller
    float top = std::ldexp(1.984375f, e - 1);
    if (top < std::fabs(xp[arg])) top *= 2;
    const float s = top / 127.0f;  // 2^(e-7) or 2^(e-6), exact
    xp[arg] = std::copysign(top, xp[arg]);
    int64_t tie = 0;
    for (int64_t i = 0; i < std::min(block, n) && tie < 2; ++i)
      if (i != arg) xp[i] = tie++ == 0 ? 2.5f * s : -3.5f * s;
  }
  for (int64_t b0 = 0; b0 < n; b0 += block) {
    const int64_t len = std::min(block, n - b0);
    float a = 0;
    for (int64_t i = 0; i < len; ++i) a = std::max(a, std::fabs(xp[b0 + i]));
    const float s = std::max(a, 1e-8f) / 127.0f;
    if (is_power_of_two(s)) continue;  // quotients are exact: every formulation agrees, ties included
    for (int64_t i = 0; i < len; ++i)
      while (midpoint_distance(static_cast<double>(xp[b0 + i]) / s) <= 0x1p-17)
        xp[b0 + i] = to_dtype(xp[b0 + i] * (1.0 - 1.0 / 128), dtype);
  }
  raw[0] = x.to(dtype);
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("quantized_grad_allreduce", reference, oracle, prepare);

}  // namespace problem_044
