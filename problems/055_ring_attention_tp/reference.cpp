#include <cmath>

#include "reference/reference.h"

namespace {

using namespace pkb;

// (B, S, H, D) -> (B, H, S, D), the layout the block products want.
at::Tensor heads_first(const at::Tensor& t) { return t.permute({0, 2, 1, 3}); }

// One block of attention in fp32: out (B, S, H, D) and lse (B, H, S) of q against k, v; `causal` masks key t > query s.
std::pair<at::Tensor, at::Tensor> block_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                                  double scale, bool causal) {
  at::Tensor s = at::matmul(heads_first(q), heads_first(k).transpose(-1, -2)) * scale;  // (B, H, S, S)
  if (causal) s = s.masked_fill(at::ones({s.size(-2), s.size(-1)}, s.options().dtype(at::kBool)).triu(1), -INFINITY);
  at::Tensor lse = at::logsumexp(s, -1);
  at::Tensor out = at::matmul(at::exp(s - lse.unsqueeze(-1)), heads_first(v)).permute({0, 2, 1, 3});
  return {out, lse};
}

// Causal ring attention of this rank's q over the group's k, v blocks (gathered: (C, B, S, H, D)), fp32 inside, merged
// through lse with the sigmoid / log-sigmoid update: the own block first (masked), then ranks c-1, c-2, ..., 0.
at::Tensor ring_attention(const at::Tensor& q, const at::Tensor& k_all, const at::Tensor& v_all, int c, double scale) {
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
std::pair<at::Tensor, at::Tensor> gather_kv(Communicator& group, const at::Tensor& k, const at::Tensor& v) {
  std::vector<int64_t> shape = k.sizes().vec();
  shape.insert(shape.begin(), group.size());
  at::Tensor k_all = at::empty(shape, k.options()), v_all = at::empty(shape, v.options());
  group.all_gather(k.contiguous(), k_all);
  group.all_gather(v.contiguous(), v_all);
  return {k_all, v_all};
}

// fp64 causal attention over a whole sequence: q, k, v (B, T, H, D) -> (B, T, H, D), plain softmax.
at::Tensor dense_causal64(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale) {
  at::Tensor s = at::matmul(heads_first(q), heads_first(k).transpose(-1, -2)) * scale;
  s = s.masked_fill(at::ones({s.size(-2), s.size(-1)}, s.options().dtype(at::kBool)).triu(1), -INFINITY);
  return at::matmul(at::softmax(s, -1), heads_first(v)).permute({0, 2, 1, 3});
}

// softmax_scale None: head_dim^-1/2 (0.125 at PKB's D = 64; the small CI shapes use another D).
double softmax_scale(const at::Tensor& t) { return 1.0 / std::sqrt(static_cast<double>(t.size(-1))); }

// q, k, v (B, S, Hl, D) from hidden (B, S, hidden) and w_qkv (3 Hl D, hidden), rows [q heads | k heads | v heads].
std::vector<at::Tensor> project_qkv(const at::Tensor& hidden, const at::Tensor& w_qkv, int64_t head_dim) {
  at::Tensor qkv = at::matmul(hidden, w_qkv.t());
  return qkv.view({hidden.size(0), hidden.size(1), 3, -1, head_dim}).unbind(2);
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &hidden = in[0], &w_qkv = in[1], &w_o = in[2];
  Communicator& cp = ctx.group("cp");
  auto qkv = project_qkv(hidden, w_qkv, ctx.param("D"));
  auto [k_all, v_all] = gather_kv(cp, qkv[1], qkv[2]);
  at::Tensor attn = ring_attention(qkv[0], k_all, v_all, cp.rank(), softmax_scale(qkv[0])).to(hidden.scalar_type());
  at::Tensor out = at::matmul(attn.reshape({hidden.size(0), hidden.size(1), -1}), w_o.t());
  ctx.group("tp").all_reduce(out, ReduceOp::sum);
  return {out};
}

// fp64, all heads at once: the TP ranks' head blocks of w_qkv and w_o stacked, causal attention over the CP ranks'
// concatenated sequence, one output projection.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  int64_t d = ctx.param("D");
  int tp = std::min(2, ctx.world), cp = ctx.world / tp;
  std::vector<at::Tensor> hidden, q, k, v, w_o;
  for (int c = 0; c < cp; ++c) hidden.push_back(in[c * tp][0].to(at::kDouble));
  at::Tensor x = at::cat(hidden, 1);  // (B, T, hidden)
  for (int t = 0; t < tp; ++t) {
    at::Tensor w = in[t][1].to(at::kDouble);  // tp rank t's heads (CP rank 0 holds the same)
    at::Tensor qkv = at::matmul(x, w.t()).view({x.size(0), x.size(1), 3, -1, d});
    q.push_back(qkv.select(2, 0));
    k.push_back(qkv.select(2, 1));
    v.push_back(qkv.select(2, 2));
    w_o.push_back(in[t][2].to(at::kDouble));
  }
  at::Tensor attn = dense_causal64(at::cat(q, 2), at::cat(k, 2), at::cat(v, 2), softmax_scale(q[0]));
  at::Tensor out = at::matmul(attn.reshape({x.size(0), x.size(1), -1}), at::cat(w_o, 1).t());
  int64_t s = in[0][0].size(1);
  std::vector<Tensors> result;
  for (int r = 0; r < ctx.world; ++r) result.push_back({out.slice(1, (r / tp) * s, (r / tp + 1) * s)});
  return result;
}

}  // namespace

PKB_REGISTER_PROBLEM("ring_attention_tp", reference, oracle);
