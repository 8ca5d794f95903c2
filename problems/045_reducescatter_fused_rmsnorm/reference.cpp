#include "reference/reference.h"

namespace problem_045 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

constexpr double kEps = 1e-5;  // PKB's eps

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &flat = in[0], &gamma = in[1];
  at::Tensor shard = at::empty({flat.numel() / ctx.world}, flat.options());
  ctx.comm->reduce_scatter(flat.contiguous(), shard, ReduceOp::sum);
  shard = shard / static_cast<double>(ctx.world);  // rounded to the input dtype, as PKB does
  at::Tensor x = shard.view({-1, gamma.size(0)}).to(at::kFloat);
  at::Tensor rs = at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + kEps);
  return {(x * rs * gamma).to(flat.scalar_type())};
}

// Dense fp64: stack every rank's vector, average over ranks, cut rank r's rows out, normalise.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> parts;
  for (const auto& r : in) parts.push_back(r[0].to(at::kDouble));
  at::Tensor mean = at::stack(parts).mean(0);  // (W * rows * hidden,)
  at::Tensor gamma = in[0][1].to(at::kDouble);
  at::Tensor x = mean.view({ctx.world, -1, gamma.size(0)});  // [owner, row, column]
  at::Tensor y = x / at::sqrt((x * x).mean(-1, /*keepdim=*/true) + kEps) * gamma;
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) out.push_back({y[r]});
  return out;
}

PKB_REGISTER_PROBLEM("reducescatter_fused_rmsnorm", reference, oracle);

}  // namespace problem_045
