#include "reference/reference.h"

namespace problem_002 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  std::vector<int64_t> shape = {ctx.world};
  for (int64_t s : in[0].sizes()) shape.push_back(s);
  at::Tensor out = at::empty(shape, in[0].options());
  ctx.comm->all_gather(in[0].contiguous(), out);
  return {out};
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> slices;
  for (const auto& rank_inputs : in) slices.push_back(rank_inputs[0]);
  return std::vector<Tensors>(ctx.world, Tensors{at::stack(slices)});
}

PKB_REGISTER_PROBLEM("allgather", reference, oracle);

}  // namespace problem_002
