#include "reference/reference.h"

namespace problem_034 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor out = at::empty({ctx.world * in[0].size(0), in[0].size(1)}, in[0].options());
  ctx.comm->all_gather(in[0].contiguous(), out);
  return {out};
}

// Row by row: out row q*M + i is rank q's row i.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int64_t M = in[0][0].size(0);
  at::Tensor out = at::empty({ctx.world * M, in[0][0].size(1)}, in[0][0].options());
  for (int q = 0; q < ctx.world; ++q)
    for (int64_t i = 0; i < M; ++i) out[q * M + i].copy_(in[q][0][i]);
  return std::vector<Tensors>(ctx.world, Tensors{out});
}

PKB_REGISTER_PROBLEM("ulysses_all_gather_into_tensor_primitive", reference, oracle);

}  // namespace problem_034
