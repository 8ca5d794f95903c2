#include "reference/reference.h"

namespace problem_037 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// Pad the sequence to a multiple of W, send chunk q of it to rank q, concatenate what arrives along the heads.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int64_t seq_dim = ctx.scalar("seq_dim"), head_dim = ctx.scalar("head_dim");
  at::Tensor x = in[0];
  const int64_t pad = (ctx.world - x.size(seq_dim) % ctx.world) % ctx.world;
  if (pad) {
    std::vector<int64_t> shape = x.sizes().vec();
    shape[seq_dim] = pad;
    x = at::cat({x, at::zeros(shape, x.options())}, seq_dim);
  }
  std::vector<at::Tensor> chunks = x.chunk(ctx.world, seq_dim), flat;
  for (const auto& c : chunks) flat.push_back(c.contiguous().view(-1));
  at::Tensor send = at::cat(flat), recv = at::empty_like(send);
  ctx.comm->all_to_all(send, recv);
  std::vector<at::Tensor> got;
  for (const auto& block : recv.chunk(ctx.world)) got.push_back(block.view(chunks[0].sizes()));
  return {at::cat(got, head_dim)};
}

// From the index formula, position by position: zeros where r*S/W + s >= T.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const at::Tensor& x0 = in[0][0];
  const int64_t B = x0.size(0), T = x0.size(1), H = x0.size(2), D = x0.size(3), chunk = (T + W - 1) / W;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor o = at::zeros({B, chunk, W * H, D}, x0.options());
    for (int q = 0; q < W; ++q)
      for (int64_t s = 0; s < chunk && r * chunk + s < T; ++s)
        o.select(1, s).narrow(1, q * H, H).copy_(in[q][0].select(1, r * chunk + s));
    out.push_back({o});
  }
  return out;
}

PKB_REGISTER_PROBLEM("ulysses_gather_heads_scatter_seq", reference, oracle);

}  // namespace problem_037
