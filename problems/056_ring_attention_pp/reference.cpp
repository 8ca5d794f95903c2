#include "reference/ring_attention.h"

// The ring-attention pieces are shared with problems 54-56: harness/src/reference/ring_attention.h.
namespace problem_056 {  // named, not anonymous: the references build as unity batches

using namespace pkb;
using namespace pkb::ring;

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

PKB_REGISTER_PROBLEM("ring_attention_pp", reference, oracle);

}  // namespace problem_056
