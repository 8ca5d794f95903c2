#include "reference/reference.h"

namespace problem_046 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &hidden = in[0], &weight = in[1], &bias = in[2];
  at::Tensor local = at::matmul(hidden, weight.t());
  local = local + bias;  // a second rounding, as PKB adds the bias after the matmul
  at::Tensor parts = at::empty({ctx.world, local.size(0), local.size(1)}, local.options());
  ctx.comm->all_gather(local.contiguous(), parts);
  return {parts.permute({1, 0, 2}).reshape({local.size(0), -1})};  // (n_tok, W * V/W), rank-major columns
}

// One dense fp64 GEMV against the full vocab weight (the shards stacked in rank order).
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> weights, biases;
  for (const auto& r : in) {
    weights.push_back(r[1].to(at::kDouble));
    biases.push_back(r[2].to(at::kDouble));
  }
  at::Tensor logits = at::addmm(at::cat(biases), in[0][0].to(at::kDouble), at::cat(weights).t());
  return std::vector<Tensors>(ctx.world, Tensors{logits});
}

PKB_REGISTER_PROBLEM("gemv_decode", reference, oracle);

}  // namespace problem_046
