#include "reference/fused_moe.h"

// The top-k MoE layer; routing, dispatch, the oracle's combine and prepare are shared with problem 32
// (harness/src/reference/fused_moe.h). Here: the expert MLP, down(silu(gate(x)) * up(x)).
namespace problem_031 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// in[3..8]: this rank's gate/up/down projections (weight, bias), all rounded as PyTorch rounds each op.
at::Tensor expert_mlp(const Tensors& in, const at::Tensor& x) {
  at::Tensor g = at::silu(at::linear(x, in[3], in[4]));
  return at::linear(g * at::linear(x, in[5], in[6]), in[7], in[8]);
}

Tensors reference(const RankContext& ctx, const Tensors& in) { return fused_moe::reference(ctx, in, expert_mlp); }

// The same MLP in double.
at::Tensor mlp_double(const Tensors& w, const at::Tensor& x) {
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  at::Tensor g = x.mm(d(w[3]).t()) + d(w[4]), u = x.mm(d(w[5]).t()) + d(w[6]);
  return (g / (1 + (-g).exp()) * u).mm(d(w[7]).t()) + d(w[8]);
}

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  return fused_moe::oracle(ctx, in, mlp_double);
}

// nn.Linear init of the router and projections, then router logits kept clear of top-k ties.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  fused_moe::init_linear_layers(raw);
  return fused_moe::separate_router_logits(ctx, rank, std::move(raw), "fused_moe_fwd");
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("fused_moe_fwd", reference, oracle, prepare);

}  // namespace problem_031
