#include "reference/reference.h"

#include <cmath>

namespace problem_023 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// PyTorch semantics: the int64 token counts are cast to the loss dtype, every op rounds to it, and the all-reduce
// sums in it (bf16 pairwise, as NCCL does).
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &loss_in = in[0], &local_tokens = in[1], &global_tokens = in[2], &grad_normalized = in[3],
                   &grad_sum = in[4];
  at::ScalarType dt = loss_in.scalar_type();
  at::Tensor local = local_tokens.to(dt), global = global_tokens.to(dt);
  // No valid tokens on this rank: its (NaN) loss must not poison the sum.
  at::Tensor loss = at::where(at::logical_and(local_tokens == 0, at::isnan(loss_in)), at::zeros_like(loss_in), loss_in);

  at::Tensor loss_sum = loss * local;
  ctx.comm->all_reduce(loss_sum, ReduceOp::sum);
  at::Tensor normalized = loss_sum / global;
  at::Tensor grad = grad_normalized * local / global + grad_sum * local;
  return {normalized, loss_sum, grad};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  auto value = [](const at::Tensor& t) { return t.item<double>(); };
  double loss_sum = 0;
  for (const auto& r : in) {
    double local = value(r[1]), loss = value(r[0]);
    if (local == 0 && std::isnan(loss)) loss = 0;
    loss_sum += loss * local;
  }
  std::vector<Tensors> out;
  for (const auto& r : in) {
    double local = value(r[1]), global = value(r[2]);
    double grad = value(r[3]) * local / global + value(r[4]) * local;
    out.push_back({at::scalar_tensor(loss_sum / global, at::kDouble), at::scalar_tensor(loss_sum, at::kDouble),
                   at::scalar_tensor(grad, at::kDouble)});
  }
  return out;
}

PKB_REGISTER_PROBLEM("grad_acc_loss", reference, oracle);

}  // namespace problem_023
