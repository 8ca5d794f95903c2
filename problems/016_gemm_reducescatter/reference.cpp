#include "reference/reference.h"

namespace problem_016 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor partial = at::mm(in[0], in[1]);  // (M, N), fp32 accumulation, rounded once to the input dtype
  at::Tensor out = at::empty({partial.size(0) / ctx.world, partial.size(1)}, partial.options());
  ctx.comm->reduce_scatter(partial, out, ReduceOp::sum);
  return {out};
}

// The full A (M, K) and B (K, N) in float64: rank q's K shard is columns of A and rows of B.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> a_blocks, b_blocks;
  for (const auto& rank_inputs : in) {
    a_blocks.push_back(rank_inputs[0].to(at::kDouble));
    b_blocks.push_back(rank_inputs[1].to(at::kDouble));
  }
  at::Tensor c = at::matmul(at::cat(a_blocks, 1), at::cat(b_blocks, 0));
  int64_t rows_local = c.size(0) / ctx.world;
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) out.push_back({c.slice(0, r * rows_local, (r + 1) * rows_local)});
  return out;
}

PKB_REGISTER_PROBLEM("gemm_reducescatter", reference, oracle);

}  // namespace problem_016
