#include "reference/reference.h"

namespace problem_006 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor gathered;
  if (ctx.rank == 0) {
    std::vector<int64_t> shape = {ctx.world};
    for (int64_t s : in[0].sizes()) shape.push_back(s);
    gathered = at::empty(shape, in[0].options());
  }
  ctx.comm->gather(in[0].contiguous(), gathered, 0);
  return {ctx.rank == 0 ? gathered : in[0]};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> slices;
  for (const auto& rank_inputs : in) slices.push_back(rank_inputs[0]);
  std::vector<Tensors> out = {{at::stack(slices)}};
  for (int r = 1; r < ctx.world; ++r) out.push_back({in[r][0]});
  return out;
}

PKB_REGISTER_PROBLEM("gather", reference, oracle);

}  // namespace problem_006
