#include "reference/reference.h"

namespace problem_007 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor out = at::empty({in[0].size(0) / ctx.world, in[0].size(1)}, in[0].options());
  ctx.comm->reduce_scatter(in[0].contiguous(), out, ReduceOp::sum);
  return {out};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  int64_t m = ctx.param("M");
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) {
    at::Tensor sum = at::zeros({m, in[0][0].size(1)}, at::kDouble);
    for (const auto& rank_inputs : in) sum += rank_inputs[0].slice(0, r * m, (r + 1) * m).to(at::kDouble);
    out.push_back({sum});
  }
  return out;
}

PKB_REGISTER_PROBLEM("reducescatter", reference, oracle);

}  // namespace problem_007
