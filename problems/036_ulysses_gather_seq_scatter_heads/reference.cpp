#include "reference/reference.h"

#include "core/error.h"

namespace problem_036 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// Head group q of x goes to rank q; received chunks are concatenated along the sequence.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int64_t seq_dim = ctx.scalar("seq_dim"), head_dim = ctx.scalar("head_dim");
  if (ctx.scalar("unpadded_dim_size") != 0) throw pkb::Error("gather_seq_scatter_heads: unpadding not supported");
  std::vector<at::Tensor> chunks = in[0].chunk(ctx.world, head_dim), flat;
  for (const auto& c : chunks) flat.push_back(c.contiguous().view(-1));
  at::Tensor send = at::cat(flat), recv = at::empty_like(send);
  ctx.comm->all_to_all(send, recv);
  std::vector<at::Tensor> got;
  for (const auto& block : recv.chunk(ctx.world)) got.push_back(block.view(chunks[0].sizes()));
  return {at::cat(got, seq_dim)};
}

// From the index formula: out_r[:, q*T + t, h, :] = x_q[:, t, r*G + h, :].
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const at::Tensor& x0 = in[0][0];
  const int64_t B = x0.size(0), T = x0.size(1), G = x0.size(2) / W, D = x0.size(3);
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor o = at::empty({B, W * T, G, D}, x0.options());
    for (int q = 0; q < W; ++q)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t h = 0; h < G; ++h)
          o.select(1, q * T + t).select(1, h).copy_(in[q][0].select(1, t).select(1, r * G + h));
    out.push_back({o});
  }
  return out;
}

PKB_REGISTER_PROBLEM("ulysses_gather_seq_scatter_heads", reference, oracle);

}  // namespace problem_036
