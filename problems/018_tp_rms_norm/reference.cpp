#include "reference/reference.h"

namespace problem_018 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

constexpr double kEps = 1e-5;  // PKB's variance_epsilon

// HF LlamaRMSNorm numerics, with the sum of squares completed across the TP ranks in fp32.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &hidden = in[0], &weight = in[1];
  at::Tensor h = hidden.to(at::kFloat);
  at::Tensor sum_sq = h.pow(2).sum(-1, /*keepdim=*/true);  // (M, 1) fp32
  ctx.comm->all_reduce(sum_sq, ReduceOp::sum);
  at::Tensor variance = sum_sq / static_cast<double>(hidden.size(-1) * ctx.world);
  at::Tensor normed = (h * at::rsqrt(variance + kEps)).to(hidden.scalar_type());
  return {weight * normed};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  // The full row is the concatenation of every rank's columns; normalise it in fp64, then hand back each shard.
  std::vector<at::Tensor> cols, weights;
  for (const auto& r : in) {
    cols.push_back(r[0].to(at::kDouble));
    weights.push_back(r[1].to(at::kDouble));
  }
  at::Tensor x = at::cat(cols, 1), w = at::cat(weights, 0);  // (M, N*W), (N*W,)
  at::Tensor rms = at::sqrt((x * x).mean(1, /*keepdim=*/true) + kEps);
  at::Tensor y = x / rms * w;
  std::vector<Tensors> out;
  int64_t n = in[0][0].size(1);
  for (int r = 0; r < ctx.world; ++r) out.push_back({y.slice(1, r * n, (r + 1) * n)});
  return out;
}

PKB_REGISTER_PROBLEM("tp_rms_norm", reference, oracle);

}  // namespace problem_018
