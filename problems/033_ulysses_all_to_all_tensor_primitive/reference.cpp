#include "reference/reference.h"

namespace problem_033 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// Chunk q of x along scatter_dim goes to rank q; received chunks are concatenated along gather_dim.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int64_t scatter_dim = ctx.scalar("scatter_dim"), gather_dim = ctx.scalar("gather_dim");
  std::vector<at::Tensor> chunks = in[0].chunk(ctx.world, scatter_dim);
  std::vector<at::Tensor> flat;
  for (const auto& c : chunks) flat.push_back(c.contiguous().view(-1));
  at::Tensor send = at::cat(flat), recv = at::empty_like(send);
  ctx.comm->all_to_all(send, recv);  // equal blocks: chunk q is block q
  std::vector<at::Tensor> got;
  for (const auto& block : recv.chunk(ctx.world)) got.push_back(block.view(chunks[0].sizes()));
  return {at::cat(got, gather_dim)};
}

// Element by element from the index formula out_r[i, q*N + c] = x_q[r*M/W + i, c].
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t M = in[0][0].size(0), N = in[0][0].size(1), rows = M / W;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor o = at::empty({rows, W * N}, in[0][0].options());
    for (int q = 0; q < W; ++q)
      for (int64_t i = 0; i < rows; ++i) o[i].narrow(0, q * N, N).copy_(in[q][0][r * rows + i]);
    out.push_back({o});
  }
  return out;
}

PKB_REGISTER_PROBLEM("ulysses_all_to_all_tensor_primitive", reference, oracle);

}  // namespace problem_033
