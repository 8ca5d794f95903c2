#include "reference/reference.h"

namespace problem_014 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor c = at::mm(in[0], in[1]);  // (M, N/W), fp32 accumulation, one rounding
  at::Tensor blocks = at::empty({ctx.world, c.size(0), c.size(1)}, c.options());
  ctx.comm->all_gather(c, blocks);
  // (W, M, N/W) -> (M, W, N/W) -> (M, N): block q becomes columns [q*N/W, (q+1)*N/W).
  return {blocks.permute({1, 0, 2}).reshape({c.size(0), -1})};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> column_blocks;
  for (const auto& rank_inputs : in)
    column_blocks.push_back(at::matmul(rank_inputs[0].to(at::kDouble), rank_inputs[1].to(at::kDouble)));
  return std::vector<Tensors>(ctx.world, Tensors{at::cat(column_blocks, 1)});
}

PKB_REGISTER_PROBLEM("gemm_allgather", reference, oracle);

}  // namespace problem_014
