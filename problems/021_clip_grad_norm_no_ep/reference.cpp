#include "reference/reference.h"

#include <cmath>

namespace problem_021 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& grads) {
  double p = static_cast<double>(ctx.scalar("norm_type"));
  double max_norm = static_cast<double>(ctx.scalar("max_norm"));
  // sum_g ||g||_p^p over this rank's shards, in fp32, then over the FSDP group (the world).
  at::Tensor total = at::zeros({}, grads[0].options().dtype(at::kFloat));
  for (const auto& g : grads) total = total + at::linalg_vector_norm(g.to(at::kFloat), p).pow(p);
  ctx.comm->all_reduce(total, ReduceOp::sum);
  at::Tensor total_norm = total.pow(1.0 / p);
  // Clip only when total_norm > max_norm; the scaling is fp32, rounded once to the gradient dtype.
  at::Tensor coef = (total_norm.reciprocal() * max_norm).clamp_max(1.0);
  Tensors out = {total_norm};
  for (const auto& g : grads) out.push_back((g.to(at::kFloat) * coef).to(g.scalar_type()));
  return out;
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  double p = static_cast<double>(ctx.scalar("norm_type"));
  double max_norm = static_cast<double>(ctx.scalar("max_norm"));
  double sum = 0;
  for (const auto& rank_grads : in)
    for (const auto& g : rank_grads) sum += g.to(at::kDouble).abs().pow(p).sum().item<double>();
  double total_norm = std::pow(sum, 1.0 / p);
  double coef = total_norm > max_norm ? max_norm / total_norm : 1.0;
  std::vector<Tensors> out;
  for (const auto& rank_grads : in) {
    Tensors o = {at::scalar_tensor(total_norm, at::kDouble)};
    for (const auto& g : rank_grads) o.push_back(g.to(at::kDouble) * coef);
    out.push_back(o);
  }
  return out;
}

PKB_REGISTER_PROBLEM("clip_grad_norm_no_ep", reference, oracle);

}  // namespace problem_021
