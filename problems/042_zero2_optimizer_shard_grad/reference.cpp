#include "reference/mlp_adam.h"

// ZeRO-2: problem 41's step (harness/src/reference/mlp_adam.h) with the gradient sharded too: a reduce-scatter
// gives each rank only its partition of the summed gradient.
namespace problem_042 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

at::Tensor gradient_partition(const RankContext& ctx, at::Tensor g, int64_t part) {
  at::Tensor g_part = at::empty({part}, g.options());
  ctx.comm->reduce_scatter(g, g_part, ReduceOp::sum);  // only this rank's partition of the gradient
  return g_part / ctx.world;
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  return mlp_adam::zero_reference(ctx, in, gradient_partition);
}

// ---- oracle: one full-batch gradient in double, then Adam element by element over each rank's partition ----

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  return mlp_adam::zero_oracle(ctx, in);
}

PKB_REGISTER_PROBLEM("zero2_optimizer_shard_grad", reference, oracle);

}  // namespace problem_042
