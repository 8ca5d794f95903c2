#include "reference/mlp_adam.h"

// ZeRO-1: each rank keeps the Adam moments of its partition of the flattened parameters. The step (broadcast,
// local gradients, Adam on the partition, all-gather) and the oracle are shared with problem 42
// (harness/src/reference/mlp_adam.h); here ZeRO-1 gets its gradient partition from a full all-reduce.
namespace problem_041 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

at::Tensor gradient_partition(const RankContext& ctx, at::Tensor g, int64_t part) {
  ctx.comm->all_reduce(g, ReduceOp::sum);  // the full gradient, though only partition r is used
  return (g / ctx.world).narrow(0, ctx.rank * part, part);
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  return mlp_adam::zero_reference(ctx, in, gradient_partition);
}

// ---- oracle: one full-batch gradient in double, then Adam element by element over each rank's partition ----

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  return mlp_adam::zero_oracle(ctx, in);
}

PKB_REGISTER_PROBLEM("zero1_optimizer_shard", reference, oracle);

}  // namespace problem_041
