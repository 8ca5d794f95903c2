#include "reference/reference.h"

namespace problem_073 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// Megatron's forward in the dtype: each elementwise op rounds, the local sum of exp accumulates in fp32 and rounds
// once, and the sums are all-reduced in the dtype.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &logits = in[0], &target = in[1];
  const int64_t vl = logits.size(2), start = ctx.rank * vl, end = start + vl;
  at::Tensor m = std::get<0>(logits.max(-1)).contiguous();
  ctx.comm->all_reduce(m, ReduceOp::max);
  at::Tensor shifted = logits - m.unsqueeze(-1);

  at::Tensor outside = target.lt(start).logical_or(target.ge(end));
  at::Tensor local = (target - start).masked_fill(outside, 0);
  at::Tensor predicted = shifted.gather(-1, local.unsqueeze(-1)).squeeze(-1).masked_fill(outside, 0).contiguous();
  ctx.comm->all_reduce(predicted);

  at::Tensor sum_exp = shifted.exp().sum(-1, false, at::kFloat).to(logits.scalar_type()).contiguous();
  ctx.comm->all_reduce(sum_exp);
  return {sum_exp.log() - predicted};
}

// fp64: one log-sum-exp over the ranks' slices concatenated in vocab order, minus the target's logit.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> slices;
  for (const auto& r : in) slices.push_back(r[0].to(at::kDouble));
  at::Tensor logits = at::cat(slices, -1);  // (B, S, V)
  at::Tensor z = logits.gather(-1, in[0][1].unsqueeze(-1)).squeeze(-1);
  at::Tensor loss = (logits.logsumexp(-1) - z).to(in[0][0].scalar_type());
  return std::vector<Tensors>(ctx.world, Tensors{loss});
}

PKB_REGISTER_PROBLEM("vocab_parallel_cross_entropy_loss", reference, oracle);

}  // namespace problem_073
