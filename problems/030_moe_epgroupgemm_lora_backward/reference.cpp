#include "reference/reference.h"

namespace problem_030 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// Three independent SUM all-reduces, in place as PKB's reference does (only returned tensors are checked).
Tensors reference(const RankContext& ctx, const Tensors& in) {
  Tensors out;
  for (const at::Tensor& grad : in) {
    at::Tensor t = grad.contiguous();
    ctx.comm->all_reduce(t, ReduceOp::sum);
    out.push_back(t);
  }
  return out;
}

// Sum of every rank's tensor in fp64, rounded to the run's dtype; the same on every rank.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  Tensors sums;
  for (size_t i = 0; i < in[0].size(); ++i) {
    at::Tensor acc = at::zeros_like(in[0][i], at::kDouble);
    for (int r = 0; r < ctx.world; ++r) acc += in[r][i].to(at::kDouble);
    sums.push_back(acc.to(ctx.float_dtype));
  }
  return std::vector<Tensors>(ctx.world, sums);
}

PKB_REGISTER_PROBLEM("moe_epgroupgemm_lora_backward", reference, oracle);

}  // namespace problem_030
