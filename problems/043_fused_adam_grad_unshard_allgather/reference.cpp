#include "reference/reference.h"

#include <cmath>

namespace problem_043 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

constexpr double kLr = 1e-3, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

// Op by op as reference.py, so bf16 rounds at the same points.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &g = in[0], &p = in[1];
  const int64_t step = ctx.scalar("step");
  at::Tensor m = in[2].mul(kBeta1).add(g, 1 - kBeta1);
  at::Tensor v = in[3].mul(kBeta2).addcmul(g, g, 1 - kBeta2);
  at::Tensor denom = (v / (1 - std::pow(kBeta2, step))).sqrt() + kEps;
  at::Tensor update = (m / (1 - std::pow(kBeta1, step))) / denom * (-kLr);
  at::Tensor shard = p + update;
  at::Tensor params = at::empty({ctx.world * shard.numel()}, shard.options());
  ctx.comm->all_gather(shard.contiguous(), params);
  return {params, update};
}

// Element by element in double, every rank's shard, no intermediate rounding.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int64_t step = ctx.scalar("step");
  const double bc1 = 1 - std::pow(kBeta1, step), bc2 = 1 - std::pow(kBeta2, step);
  std::vector<at::Tensor> shards, updates;
  for (const auto& r : in) {
    at::Tensor g = r[0].to(at::kDouble), p = r[1].to(at::kDouble), m0 = r[2].to(at::kDouble), v0 = r[3].to(at::kDouble);
    at::Tensor u = at::empty_like(g), out = at::empty_like(g);
    auto ga = g.accessor<double, 1>(), pa = p.accessor<double, 1>(), ma = m0.accessor<double, 1>(),
         va = v0.accessor<double, 1>();
    auto ua = u.accessor<double, 1>(), oa = out.accessor<double, 1>();
    for (int64_t i = 0; i < g.numel(); ++i) {
      double m = kBeta1 * ma[i] + (1 - kBeta1) * ga[i], v = kBeta2 * va[i] + (1 - kBeta2) * ga[i] * ga[i];
      ua[i] = -kLr * (m / bc1) / (std::sqrt(v / bc2) + kEps);
      oa[i] = pa[i] + ua[i];
    }
    shards.push_back(out);
    updates.push_back(u);
  }
  at::Tensor params = at::cat(shards);
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) out.push_back({params, updates[r]});
  return out;
}

PKB_REGISTER_PROBLEM("fused_adam_grad_unshard_allgather", reference, oracle);

}  // namespace problem_043
