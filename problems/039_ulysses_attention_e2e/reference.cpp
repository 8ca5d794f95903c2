#include "reference/reference.h"

#include <cmath>

namespace problem_039 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// Equal all-to-all of the W chunks of x along dim `split`, received chunks concatenated along dim `join`.
at::Tensor all_to_all(Communicator& comm, const at::Tensor& x, int64_t split, int64_t join) {
  std::vector<at::Tensor> chunks = x.chunk(comm.size(), split), flat;
  for (const auto& c : chunks) flat.push_back(c.contiguous().view(-1));
  at::Tensor send = at::cat(flat), recv = at::empty_like(send);
  comm.all_to_all(send, recv);
  std::vector<at::Tensor> got;
  for (const auto& block : recv.chunk(comm.size())) got.push_back(block.view(chunks[0].sizes()));
  return at::cat(got, join);
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor& hidden = in[0];
  const int64_t heads = ctx.scalar("num_heads"), B = hidden.size(0), S = hidden.size(1), width = hidden.size(2);
  const int64_t D = width / heads;
  at::Tensor qkv = hidden.matmul(in[1].t()).view({B, S, 3, heads, D});
  Tensors qkv_full;  // q, k, v as (B, G, W*S, D): full sequence, this rank's head group
  for (int64_t i = 0; i < 3; ++i) qkv_full.push_back(all_to_all(*ctx.comm, qkv.select(2, i), 2, 1).transpose(1, 2));
  at::Tensor scores = qkv_full[0].matmul(qkv_full[1].transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(D)));
  at::Tensor o = at::softmax(scores, -1).matmul(qkv_full[2]);
  o = all_to_all(*ctx.comm, o.transpose(1, 2), 1, 2);  // (B, S, H, D): own positions, all heads
  return {o.reshape({B, S, width}).matmul(in[2].t())};
}

// Dense attention over the whole sequence in double, every head at once: position p's q, k, v come from the
// projection of the rank that holds p.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t heads = ctx.scalar("num_heads"), B = in[0][0].size(0), S = in[0][0].size(1), width = in[0][0].size(2);
  const int64_t D = width / heads, T = W * S;
  std::vector<at::Tensor> parts;
  for (const auto& r : in) parts.push_back(r[0].to(at::kDouble).matmul(r[1].to(at::kDouble).t()));
  at::Tensor qkv = at::cat(parts, 1).view({B, T, 3, heads, D}).permute({2, 0, 3, 1, 4});  // (3, B, H, T, D)
  at::Tensor scores = at::einsum("bhtd,bhsd->bhts", {qkv[0], qkv[1]}) / std::sqrt(static_cast<double>(D));
  at::Tensor o =
      at::einsum("bhts,bhsd->bhtd", {at::softmax(scores, -1), qkv[2]}).permute({0, 2, 1, 3});  // (B, T, H, D)
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r)
    out.push_back({o.narrow(1, r * S, S).reshape({B, S, width}).matmul(in[r][2].to(at::kDouble).t())});
  return out;
}

// Projections get nn.Linear-like scale, N(0, 1/(H*D)), from N(0, 1) draws.
Tensors prepare(const OracleContext&, int, Tensors raw) {
  for (int i : {1, 2})
    raw[i] = (raw[i].to(at::kFloat) / std::sqrt(static_cast<double>(raw[i].size(1)))).to(raw[i].scalar_type());
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("ulysses_attention_e2e", reference, oracle, prepare);

}  // namespace problem_039
