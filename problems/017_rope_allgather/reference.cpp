#include "reference/reference.h"

namespace problem_017 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// x*cos + rotate_half(x)*sin with cos/sin (Bt, S, D) broadcast over the head axis. Each op is a separate ATen op,
// so in bf16 the two products and the sum each round once, as in PyTorch.
at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  int64_t half = x.size(-1) / 2;
  at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * cos.unsqueeze(2) + rotated * sin.unsqueeze(2);
}

// Gathers (Bt, S, H, D) shards into (Bt, W*S, H, D): rank q's shard at sequence positions [q*S, (q+1)*S).
at::Tensor gather_sequence(const RankContext& ctx, const at::Tensor& local) {
  std::vector<int64_t> stacked = {ctx.world};
  for (int64_t s : local.sizes()) stacked.push_back(s);
  at::Tensor all = at::empty(stacked, local.options());  // (W, Bt, S, H, D)
  ctx.comm->all_gather(local.contiguous(), all);
  return all.permute({1, 0, 2, 3, 4}).reshape({local.size(0), ctx.world * local.size(1), local.size(2), local.size(3)});
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &q = in[0], &k = in[1], &cos = in[2], &sin = in[3];
  return {gather_sequence(ctx, rope(q, cos, sin)), gather_sequence(ctx, rope(k, cos, sin))};
}

// fp64, with the rotation written out per half: out1 = x1*c1 - x2*s1, out2 = x2*c2 + x1*s2.
at::Tensor rope_exact(const at::Tensor& x_in, const at::Tensor& cos_in, const at::Tensor& sin_in) {
  at::Tensor x = x_in.to(at::kDouble), c = cos_in.to(at::kDouble).unsqueeze(2), s = sin_in.to(at::kDouble).unsqueeze(2);
  int64_t h = x.size(-1) / 2;
  at::Tensor x1 = x.slice(-1, 0, h), x2 = x.slice(-1, h);
  at::Tensor out1 = x1 * c.slice(-1, 0, h) - x2 * s.slice(-1, 0, h);
  at::Tensor out2 = x2 * c.slice(-1, h) + x1 * s.slice(-1, h);
  return at::cat({out1, out2}, -1);
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> qs, ks;
  for (const auto& r : in) {
    qs.push_back(rope_exact(r[0], r[2], r[3]));
    ks.push_back(rope_exact(r[1], r[2], r[3]));
  }
  // Concatenating the shards along the sequence axis in rank order; every rank holds the same result.
  Tensors global = {at::cat(qs, 1), at::cat(ks, 1)};
  return std::vector<Tensors>(ctx.world, global);
}

PKB_REGISTER_PROBLEM("rope_allgather", reference, oracle);

}  // namespace problem_017
