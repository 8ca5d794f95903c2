#include "reference/fused_moe.h"

// Problem 31's top-k MoE layer (harness/src/reference/fused_moe.h: routing, dispatch, the oracle's combine,
// prepare) with a LoRA branch on each expert projection. Here: that MLP, its fp64 twin, the LoRA factors' init.
namespace problem_032 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// in[3..8]: this rank's gate/up/down projections (weight, bias); in[9..14]: their LoRA factors (A, B) for gate, up,
// down. Each linear rounds, then each add of a LoRA branch rounds, as PyTorch rounds each op.
at::Tensor lora(const at::Tensor& x, const at::Tensor& a, const at::Tensor& b) {
  return at::linear(at::linear(x, a), b);
}

at::Tensor expert_mlp(const Tensors& in, const at::Tensor& x) {
  at::Tensor g = at::linear(x, in[3], in[4]) + lora(x, in[9], in[10]);
  at::Tensor u = at::linear(x, in[5], in[6]) + lora(x, in[11], in[12]);
  at::Tensor y = at::silu(g) * u;
  return at::linear(y, in[7], in[8]) + lora(y, in[13], in[14]);
}

Tensors reference(const RankContext& ctx, const Tensors& in) { return fused_moe::reference(ctx, in, expert_mlp); }

// (W + B A) applied as one merged weight, the way a deployed LoRA model folds its adapters.
at::Tensor mlp_double(const Tensors& w, const at::Tensor& x) {
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  at::Tensor wg = d(w[3]) + d(w[10]).mm(d(w[9])), wu = d(w[5]) + d(w[12]).mm(d(w[11])),
             wd = d(w[7]) + d(w[14]).mm(d(w[13]));
  at::Tensor g = x.mm(wg.t()) + d(w[4]), u = x.mm(wu.t()) + d(w[6]);
  return (g / (1 + (-g).exp()) * u).mm(wd.t()) + d(w[8]);
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  return fused_moe::oracle(ctx, in, mlp_double);
}

// Problem 31's init, and LoRA A factors N(0, 1/in) and B factors N(0, 0.1^2) (so each adapter moves its projection
// by about half its size), from N(0, 1) draws; then router logits kept clear of top-k ties.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const at::ScalarType dtype = raw[0].scalar_type();
  fused_moe::init_linear_layers(raw);
  for (int i : {9, 11, 13}) raw[i] = (raw[i].to(at::kFloat) / std::sqrt(static_cast<double>(raw[i].size(1)))).to(dtype);
  for (int i : {10, 12, 14}) raw[i] = (raw[i].to(at::kFloat) * 0.1).to(dtype);
  return fused_moe::separate_router_logits(ctx, rank, std::move(raw), "fused_moe_fwd_lora");
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("fused_moe_fwd_lora", reference, oracle, prepare);

}  // namespace problem_032
