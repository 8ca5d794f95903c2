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

// One stage: qkv projection (rounded), causal ring attention over the stage's CP group (fp32, cast back), output
// projection (rounded).
at::Tensor attention_stage(Communicator& cp, const at::Tensor& x, const at::Tensor& w_qkv, const at::Tensor& w_o,
                           int64_t head_dim) {
  at::Tensor qkv = at::matmul(x, w_qkv.t()).view({x.size(0), x.size(1), 3, -1, head_dim});
  auto [k_all, v_all] = gather_kv(cp, qkv.select(2, 1), qkv.select(2, 2));
  at::Tensor attn = ring_attention(qkv.select(2, 0), k_all, v_all, cp.rank(), softmax_scale(k_all)).to(x.scalar_type());
  return at::matmul(attn.reshape({x.size(0), x.size(1), -1}), w_o.t());
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  Communicator &cp = ctx.group("cp"), &pp = ctx.group("pp");
  int64_t d = ctx.param("D");
  at::Tensor x = in[0];
  if (pp.rank() == 1) {  // stage 1 ignores its own hidden_states: its input is stage 0's output
    x = at::empty_like(in[0]);
    pp.recv(x, 0);
  }
  at::Tensor out = attention_stage(cp, x.contiguous(), in[1], in[2], d);
  if (pp.rank() == 0 && pp.size() > 1) pp.send(out.contiguous(), 1);
  return {out};
}

// fp64 dense causal attention per stage over the full sequence; stage 1 is applied to stage 0's unrounded output.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  int64_t d = ctx.param("D");
  int pp = std::min(2, ctx.world), cp = ctx.world / pp;
  auto stage = [&](const at::Tensor& x, int first_rank) {
    at::Tensor w_qkv = in[first_rank][1].to(at::kDouble), w_o = in[first_rank][2].to(at::kDouble);
    at::Tensor qkv = at::matmul(x, w_qkv.t()).view({x.size(0), x.size(1), 3, -1, d});
    at::Tensor attn = dense_causal64(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), softmax_scale(qkv));
    return at::matmul(attn.reshape({x.size(0), x.size(1), -1}), w_o.t());
  };
  std::vector<at::Tensor> hidden;
  for (int c = 0; c < cp; ++c) hidden.push_back(in[c][0].to(at::kDouble));
  std::vector<at::Tensor> outs = {stage(at::cat(hidden, 1), 0)};
  if (pp == 2) outs.push_back(stage(outs[0], cp));
  int64_t s = in[0][0].size(1);
  std::vector<Tensors> result;
  for (int r = 0; r < ctx.world; ++r) result.push_back({outs[r / cp].slice(1, (r % cp) * s, (r % cp + 1) * s)});
  return result;
}

}  // namespace

PKB_REGISTER_PROBLEM("ring_attention_pp", reference, oracle);
