// Causal ring attention as problems 54-56 compute it (ring_attention, its TP and PP variants): one block of fp32
// attention, the lse merge in ring order, the group's K/V gathered at once, and the fp64 dense oracle.
#pragma once

#include <cmath>
#include <utility>

#include "reference/reference.h"

namespace pkb::ring {

// (B, S, H, D) -> (B, H, S, D), the layout the block products want.
inline at::Tensor heads_first(const at::Tensor& t) { return t.permute({0, 2, 1, 3}); }

// One block of attention in fp32: out (B, S, H, D) and lse (B, H, S) of q against k, v; `causal` masks key t > query s.
inline std::pair<at::Tensor, at::Tensor> block_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                         double scale, bool causal) {
  at::Tensor s = at::matmul(heads_first(q), heads_first(k).transpose(-1, -2)) * scale;  // (B, H, S, S)
  if (causal) s = s.masked_fill(at::ones({s.size(-2), s.size(-1)}, s.options().dtype(at::kBool)).triu(1), -INFINITY);
  at::Tensor lse = at::logsumexp(s, -1);
  at::Tensor out = at::matmul(at::exp(s - lse.unsqueeze(-1)), heads_first(v)).permute({0, 2, 1, 3});
  return {out, lse};
}

// Causal ring attention of this rank's q over the group's k, v blocks (gathered: (C, B, S, H, D)), fp32 inside, merged
// through lse with the sigmoid / log-sigmoid update: the own block first (masked), then ranks c-1, c-2, ..., 0.
inline at::Tensor ring_attention(const at::Tensor& q, const at::Tensor& k_all, const at::Tensor& v_all, int c,
                                 double scale) {
  at::Tensor q32 = q.to(at::kFloat);
  auto [out, lse] = block_attention(q32, k_all[c].to(at::kFloat), v_all[c].to(at::kFloat), scale, true);
  for (int j = c - 1; j >= 0; --j) {
    auto [o, l] = block_attention(q32, k_all[j].to(at::kFloat), v_all[j].to(at::kFloat), scale, false);
    at::Tensor w = at::sigmoid(l - lse).permute({0, 2, 1}).unsqueeze(-1);  // (B, S, H, 1)
    out = out - w * (out - o);
    lse = lse - at::log_sigmoid(lse - l);
  }
  return out;
}

// k, v of every member of `group`, stacked in group-rank order.
inline std::pair<at::Tensor, at::Tensor> gather_kv(Communicator& group, const at::Tensor& k, const at::Tensor& v) {
  std::vector<int64_t> shape = k.sizes().vec();
  shape.insert(shape.begin(), group.size());
  at::Tensor k_all = at::empty(shape, k.options()), v_all = at::empty(shape, v.options());
  group.all_gather(k.contiguous(), k_all);
  group.all_gather(v.contiguous(), v_all);
  return {k_all, v_all};
}

// fp64 causal attention over a whole sequence: q, k, v (B, T, H, D) -> (B, T, H, D), plain softmax.
inline at::Tensor dense_causal64(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale) {
  at::Tensor s = at::matmul(heads_first(q), heads_first(k).transpose(-1, -2)) * scale;
  s = s.masked_fill(at::ones({s.size(-2), s.size(-1)}, s.options().dtype(at::kBool)).triu(1), -INFINITY);
  return at::matmul(at::softmax(s, -1), heads_first(v)).permute({0, 2, 1, 3});
}

// softmax_scale None: head_dim^-1/2 (0.125 at PKB's D = 64; the small CI shapes use another D).
inline double softmax_scale(const at::Tensor& t) { return 1.0 / std::sqrt(static_cast<double>(t.size(-1))); }

}  // namespace pkb::ring
