// The expert-parallel MoE layer of problems 49-51 (moe_ep_balanced, moe_ep_wide, moe_ep_narrow), which differ only
// in their EP group (the world, or problem.json's "ep" groups) and their shapes: the libtorch reference, the fp64
// oracle and the input preparation (PyTorch's Linear init, router logits kept clear of top-k ties), once.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>

#include "reference/reference.h"

namespace pkb::moe_ep {

// Inputs: 0 hidden (M, N), 1 router weight (E, N), 2 router bias (E), 3-4 gate_proj, 5-6 up_proj, 7-8 down_proj.
constexpr int kHidden = 0, kRouter = 1, kRouterBias = 2, kGate = 3, kUp = 5, kDown = 7;

inline std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// The rank's expert MLP, every op rounded to the dtype: down(silu(gate(x)) * up(x)).
inline at::Tensor expert_mlp(const Tensors& in, const at::Tensor& x) {
  at::Tensor gate = at::silu(at::linear(x, in[kGate], in[kGate + 1]));
  return at::linear(gate * at::linear(x, in[kUp], in[kUp + 1]), in[kDown], in[kDown + 1]);
}

inline Tensors reference(const RankContext& ctx, const Tensors& in, Communicator& ep) {
  const at::Tensor& x = in[kHidden];
  int64_t experts = ctx.scalar("num_experts"), top_k = ctx.scalar("top_k");
  int64_t group = ep.size(), local_experts = experts / group, m = x.size(0), n = x.size(1);

  // Router: bias fused into the linear's single rounding; softmax in fp32, probabilities rounded; top-k, unnormalised.
  at::Tensor probs = at::softmax(at::linear(x, in[kRouter], in[kRouterBias]).to(at::kFloat), -1).to(x.scalar_type());
  auto [weights, chosen] = probs.topk(top_k, -1);

  // Dispatch buffer: expert-major, tokens ascending within an expert (a stable sort of the flat choices).
  at::Tensor flat = chosen.reshape({-1});
  at::Tensor order = std::get<1>(flat.sort(/*stable=*/true, 0, false));
  at::Tensor send = x.index_select(0, at::div(order, top_k, "floor"));
  at::Tensor per_rank = at::bincount(flat, {}, experts).view({group, local_experts}).sum(1);
  at::Tensor counts = at::empty({group * group}, per_rank.options());
  ep.all_gather(per_rank.contiguous(), counts);  // counts[q * group + p]: rows rank q sends to rank p
  std::vector<int64_t> table = host_vector(counts), send_rows(group), recv_rows(group);  // the host sync
  int64_t received = 0;
  for (int q = 0; q < group; ++q) {
    send_rows[q] = table[ep.rank() * group + q];
    recv_rows[q] = table[q * group + ep.rank()];
    received += recv_rows[q];
  }
  at::Tensor rows = at::empty({received, n}, x.options());
  ep.all_to_all(send.contiguous(), rows, send_rows, recv_rows);
  at::Tensor done = expert_mlp(in, rows);  // every local expert shares this rank's MLP
  at::Tensor back = at::empty({m * top_k, n}, x.options());
  ep.all_to_all(done.contiguous(), back, recv_rows, send_rows);

  // Un-permute to (M, top_k, N) and combine: each weighted row rounded, then added into zeros in choice order.
  at::Tensor y = at::empty_like(back).index_copy_(0, order, back).view({m, top_k, n});
  at::Tensor out = at::zeros_like(x);
  for (int64_t k = 0; k < top_k; ++k) out = out + weights.select(1, k).unsqueeze(1) * y.select(1, k);
  return {out};
}

// fp64 MLP of one rank's weights applied to rows x.
inline at::Tensor mlp64(const Tensors& w, const at::Tensor& x) {
  auto d = [&](int i) { return w[i].to(at::kDouble); };
  at::Tensor g = at::addmm(d(kGate + 1), x, d(kGate).t());
  at::Tensor u = at::addmm(d(kUp + 1), x, d(kUp).t());
  return at::addmm(d(kDown + 1), g * at::sigmoid(g) * u, d(kDown).t());
}

// Dense fp64: every token through every group member's MLP, then the fp64 top-k probabilities pick and weight them.
inline std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in,
                                   const std::function<std::vector<int>(int)>& group_of_rank) {
  int64_t experts = ctx.scalar("num_experts"), top_k = ctx.scalar("top_k");
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) {
    std::vector<int> members = group_of_rank(r);
    int64_t local_experts = experts / static_cast<int64_t>(members.size());
    at::Tensor x = in[r][kHidden].to(at::kDouble);
    at::Tensor probs =
        at::softmax(at::addmm(in[r][kRouterBias].to(at::kDouble), x, in[r][kRouter].to(at::kDouble).t()), -1);
    std::vector<at::Tensor> y;
    for (int q : members) y.push_back(mlp64(in[q], x));
    at::Tensor p = probs.contiguous();
    std::vector<at::Tensor> rows;
    for (int64_t t = 0; t < x.size(0); ++t) {
      std::vector<std::pair<double, int64_t>> ranked;
      for (int64_t e = 0; e < experts; ++e) ranked.push_back({p[t][e].item<double>(), e});
      std::sort(ranked.begin(), ranked.end(), std::greater<>());
      at::Tensor row = at::zeros({x.size(1)}, at::kDouble);
      for (int64_t k = 0; k < top_k; ++k) row += ranked[k].first * y[ranked[k].second / local_experts][t];
      rows.push_back(row);
    }
    out.push_back({at::stack(rows)});
  }
  return out;
}

// ---- prepare: PyTorch's Linear init, and router logits kept clear of top-k ties ----

// Gap that the (k)th and (k+1)th fp64 logits must keep: larger than any honest kernel's logit error (bf16 rounding
// of the logits, fused or not: at most about 2 ulps of the larger one, i.e. 2^-7 relative), with margin.
inline double tie_margin(double a, double b) {
  return std::max(0.25, std::ldexp(std::max(std::fabs(a), std::fabs(b)), -5));
}

inline at::Tensor logits64(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return at::addmm(b.to(at::kDouble), x.to(at::kDouble), w.to(at::kDouble).t());
}

inline Tensors prepare(const OracleContext& ctx, int /*rank*/, Tensors raw) {
  // nn.Linear(in, out): weight and bias ~ U(-1/sqrt(in), 1/sqrt(in)); drawn as U(-1, 1) and scaled here.
  for (int i : {kGate, kUp, kDown}) {
    double bound = 1.0 / std::sqrt(static_cast<double>(raw[i].size(1)));
    raw[i] = (raw[i].to(at::kFloat) * bound).to(raw[i].scalar_type());
    raw[i + 1] = (raw[i + 1].to(at::kFloat) * bound).to(raw[i + 1].scalar_type());
  }
  // Router weights N(0, 16 / N) (logits ~ 4), not PKB's N(0, 1) (logits ~ 32): see the deviation in problem.json.
  double router_std = 4.0 / std::sqrt(static_cast<double>(raw[kRouter].size(1)));
  raw[kRouter] = (raw[kRouter].to(at::kFloat) * router_std).to(raw[kRouter].scalar_type());
  int64_t experts = ctx.scalar("num_experts"), top_k = ctx.scalar("top_k");
  if (top_k >= experts) return raw;  // the selection is total: no boundary to tie on
  // Token by token: while the top_k-th and next logits are closer than the margin, move one hidden element, the one
  // where the two router rows differ most, so the top_k-th rises above the next. The change is a few bf16 steps.
  at::ScalarType dtype = raw[kHidden].scalar_type();
  at::Tensor x = raw[kHidden].to(at::kFloat).contiguous();
  at::Tensor w = raw[kRouter].to(at::kDouble).contiguous();
  for (int64_t t = 0; t < x.size(0); ++t) {
    for (int attempt = 0; attempt < 64; ++attempt) {
      at::Tensor row = x[t].to(dtype).unsqueeze(0);
      at::Tensor l = logits64(row, raw[kRouter], raw[kRouterBias])[0];
      auto sorted = l.sort(0, /*descending=*/true);
      double above = std::get<0>(sorted)[top_k - 1].item<double>(), below = std::get<0>(sorted)[top_k].item<double>();
      double margin = tie_margin(above, below);
      if (above - below >= margin) break;
      int64_t a = std::get<1>(sorted)[top_k - 1].item<int64_t>(), b = std::get<1>(sorted)[top_k].item<int64_t>();
      at::Tensor diff = w[a] - w[b];
      int64_t j = diff.abs().argmax().item<int64_t>();
      double step = 2 * margin / diff[j].item<double>();
      x[t][j] = x[t][j].item<double>() + step;
    }
  }
  raw[kHidden] = x.to(dtype);
  return raw;
}

}  // namespace pkb::moe_ep
