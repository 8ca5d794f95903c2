#include "reference/reference.h"

namespace problem_011 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor& a_local = in[0];
  const at::Tensor& b = in[1];
  // Rank q's A_local^T is rows [q*K/W, (q+1)*K/W) of A^T, so a plain all-gather assembles A^T (K, M).
  at::Tensor a_t_local = a_local.t().contiguous();
  at::Tensor a_t = at::empty({ctx.world * a_t_local.size(0), a_t_local.size(1)}, a_t_local.options());
  ctx.comm->all_gather(a_t_local, a_t);
  return {at::mm(b.t(), a_t).t()};  // (B^T A^T)^T = A B; fp32 accumulation, one rounding
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> column_blocks;
  for (const auto& rank_inputs : in) column_blocks.push_back(rank_inputs[0].to(at::kDouble));
  at::Tensor a = at::cat(column_blocks, 1);  // (M, K)
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) out.push_back({at::matmul(a, in[r][1].to(at::kDouble))});
  return out;
}

PKB_REGISTER_PROBLEM("allgather_gemm_at", reference, oracle);

}  // namespace problem_011
