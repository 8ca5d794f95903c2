#include "reference/ring_attention.h"

// The ring-attention pieces are shared with problems 54-56: harness/src/reference/ring_attention.h.
namespace problem_055 {  // named, not anonymous: the references build as unity batches

using namespace pkb;
using namespace pkb::ring;

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

PKB_REGISTER_PROBLEM("ring_attention_tp", reference, oracle);

}  // namespace problem_055
