#include "reference/reference.h"

namespace problem_038 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// View the columns as (3, H*D); head group q of every section goes to rank q; concatenate along the sequence.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int64_t seq_dim = ctx.scalar("seq_dim");
  const at::Tensor& x = in[0];
  at::Tensor sections = x.view({x.size(0), x.size(1), 3, x.size(2) / 3});
  std::vector<at::Tensor> chunks = sections.chunk(ctx.world, 3), flat;
  for (const auto& c : chunks) flat.push_back(c.contiguous().view(-1));
  at::Tensor send = at::cat(flat), recv = at::empty_like(send);
  ctx.comm->all_to_all(send, recv);
  std::vector<at::Tensor> got;
  for (const auto& block : recv.chunk(ctx.world)) got.push_back(block.view(chunks[0].sizes()));
  at::Tensor out = at::cat(got, seq_dim);
  return {out.reshape({out.size(0), out.size(1), -1})};
}

// From the index formula: out_r[:, q*T + t, c*F + e] = qkv_q[:, t, c*3F*W/3 + r*F + e] with F = H*D/W.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const at::Tensor& x0 = in[0][0];
  const int64_t B = x0.size(0), T = x0.size(1), section = x0.size(2) / 3, F = section / W;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor o = at::empty({B, W * T, 3 * F}, x0.options());
    for (int q = 0; q < W; ++q)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t c = 0; c < 3; ++c)
          o.select(1, q * T + t).narrow(1, c * F, F).copy_(in[q][0].select(1, t).narrow(1, c * section + r * F, F));
    out.push_back({o});
  }
  return out;
}

PKB_REGISTER_PROBLEM("ulysses_gather_seq_scatter_heads_qkv", reference, oracle);

}  // namespace problem_038
