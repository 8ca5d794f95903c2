#include "reference/reference.h"

namespace problem_005 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor out = ctx.rank == 0 ? at::empty_like(in[0][0]) : at::empty_like(in[0]);
  ctx.comm->scatter(in[0].contiguous(), out, 0);
  return {out};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) out.push_back({in[0][0][r]});
  return out;
}

PKB_REGISTER_PROBLEM("scatter", reference, oracle);

}  // namespace problem_005
