#include "reference/reference.h"

namespace problem_004 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor out = in[0].clone();
  int dst = static_cast<int>(ctx.scalar("dst"));
  ctx.comm->reduce(out, dst, ReduceOp::sum);
  // A non-root buffer's contents after a reduce are the backend's business (partial sums under gloo): non-root
  // ranks return their input, whatever the communicator left.
  return {ctx.rank == dst ? out : in[0].clone()};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  int dst = static_cast<int>(ctx.scalar("dst"));
  at::Tensor sum = at::zeros(in[0][0].sizes(), at::kDouble);
  for (const auto& rank_inputs : in) sum += rank_inputs[0].to(at::kDouble);
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) out.push_back({r == dst ? sum : in[r][0]});
  return out;
}

PKB_REGISTER_PROBLEM("reduce", reference, oracle);

}  // namespace problem_004
