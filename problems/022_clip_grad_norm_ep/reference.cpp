#include "reference/reference.h"

#include <cmath>

namespace problem_022 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

at::Tensor norm_pow(const at::Tensor& g, double p) { return at::linalg_vector_norm(g.to(at::kFloat), p).pow(p); }

Tensors reference(const RankContext& ctx, const Tensors& in) {
  double p = static_cast<double>(ctx.scalar("norm_type"));
  double max_norm = static_cast<double>(ctx.scalar("max_norm"));
  int64_t ep_size = ctx.scalar("ep_size");
  const at::Tensor& non_ep = in[0];
  // Expert gradients are averaged over the EP replicas first (rounded to their dtype).
  at::Tensor ep = ep_size > 1 ? in[1] / static_cast<double>(ep_size) : in[1];

  at::Tensor non_ep_total = norm_pow(non_ep, p);
  ctx.comm->all_reduce(non_ep_total, ReduceOp::sum);  // FSDP group = the world
  at::Tensor ep_total = norm_pow(ep, p);
  ctx.group("ep_fsdp").all_reduce(ep_total, ReduceOp::sum);
  ctx.group("ep").all_reduce(ep_total, ReduceOp::sum);  // a single rank where there is no EP group
  at::Tensor total_norm = (non_ep_total + ep_total).pow(1.0 / p);

  at::Tensor coef = (total_norm.reciprocal() * max_norm).clamp_max(1.0);
  auto clip = [&](const at::Tensor& g) { return (g.to(at::kFloat) * coef).to(g.scalar_type()); };
  return {total_norm, clip(non_ep), clip(ep)};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  double p = static_cast<double>(ctx.scalar("norm_type"));
  double max_norm = static_cast<double>(ctx.scalar("max_norm"));
  double ep_size = static_cast<double>(ctx.scalar("ep_size"));
  // Both terms end up summed over every rank, so the norm is one global sum in fp64.
  double sum = 0;
  for (const auto& r : in) {
    sum += r[0].to(at::kDouble).abs().pow(p).sum().item<double>();
    sum += (r[1].to(at::kDouble) / ep_size).abs().pow(p).sum().item<double>();
  }
  double total_norm = std::pow(sum, 1.0 / p);
  double coef = total_norm > max_norm ? max_norm / total_norm : 1.0;
  std::vector<Tensors> out;
  for (const auto& r : in)
    out.push_back({at::scalar_tensor(total_norm, at::kDouble), r[0].to(at::kDouble) * coef,
                   r[1].to(at::kDouble) / ep_size * coef});
  return out;
}

PKB_REGISTER_PROBLEM("clip_grad_norm_ep", reference, oracle);

}  // namespace problem_022
