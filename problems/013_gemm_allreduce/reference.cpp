#include "reference/reference.h"

namespace problem_013 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor out = at::mm(in[0], in[1]);  // fp32 accumulation, rounded once to the input dtype
  ctx.comm->all_reduce(out, ReduceOp::sum);
  return {out};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  at::Tensor sum = at::zeros({in[0][0].size(0), in[0][1].size(1)}, at::kDouble);
  for (const auto& rank_inputs : in) sum += at::matmul(rank_inputs[0].to(at::kDouble), rank_inputs[1].to(at::kDouble));
  return std::vector<Tensors>(ctx.world, Tensors{sum});
}

PKB_REGISTER_PROBLEM("gemm_allreduce", reference, oracle);

}  // namespace problem_013
