#include "reference/reference.h"

namespace problem_012 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor a_local = in[0].contiguous();
  const at::Tensor& b = in[1];
  at::Tensor shards = at::empty({ctx.world, a_local.size(0), a_local.size(1)}, a_local.options());
  ctx.comm->all_gather(a_local, shards);
  // (W, M, K/W) -> (M, W, K/W) -> (M, K): the shards side by side along columns, in rank order.
  at::Tensor a = shards.permute({1, 0, 2}).reshape({a_local.size(0), -1});
  return {at::mm(a, b)};  // fp32 accumulation, one rounding
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> column_blocks;
  for (const auto& rank_inputs : in) column_blocks.push_back(rank_inputs[0].to(at::kDouble));
  at::Tensor a = at::cat(column_blocks, 1);  // (M, K)
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) out.push_back({at::matmul(a, in[r][1].to(at::kDouble))});
  return out;
}

PKB_REGISTER_PROBLEM("allgather_gemm", reference, oracle);

}  // namespace problem_012
