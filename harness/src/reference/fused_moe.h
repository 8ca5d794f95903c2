// The top-k MoE layer of problems 31 and 32 (fused_moe_fwd, fused_moe_fwd_lora), which differ only in the expert
// MLP (32 adds a LoRA branch to each projection) and the LoRA factors' init: the libtorch reference's routing,
// dispatch and combine, the fp64 oracle's routing and combine, and the input preparation (nn.Linear init, router
// logits kept clear of top-k ties), once. Each problem passes in its MLP, in the run dtype for the reference and
// in fp64 for the oracle.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "core/error.h"
#include "reference/reference.h"

namespace pkb::fused_moe {

// Inputs: 0 hidden (M, N), 1-2 router (weight, bias), 3-8 this rank's gate/up/down projections (weight, bias);
// a problem may add more after them (32: LoRA factors).

// The rank's expert MLP applied to rows x, from the rank's inputs; every local expert shares it.
using ExpertMlp = at::Tensor (*)(const Tensors& in, const at::Tensor& x);

inline std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// Router softmax and top-k in the dtype, rows dispatched expert-major to the experts' ranks, `expert_mlp` there,
// back, weighted and scatter-added in choice order.
inline Tensors reference(const RankContext& ctx, const Tensors& in, ExpertMlp expert_mlp) {
  const at::Tensor& x = in[0];
  const int64_t experts = ctx.scalar("num_experts"), top_k = ctx.scalar("top_k"), local = experts / ctx.world;
  at::Tensor probs = at::softmax(at::linear(x, in[1], in[2]), -1);
  auto [weights, chosen] = probs.topk(top_k, -1);  // (M, K), descending

  at::Tensor flat = chosen.reshape({-1});
  at::Tensor order = std::get<1>(at::sort(flat, /*stable=*/true, 0, false));  // expert-major, tokens ascending
  at::Tensor token_of_row = at::arange(x.size(0), flat.options()).repeat_interleave(top_k).index_select(0, order);
  at::Tensor rows = x.index_select(0, token_of_row);
  at::Tensor results;
  if (ctx.world == 1) {
    results = expert_mlp(in, rows);
  } else {
    at::Tensor counts = at::bincount(flat, {}, experts), all = at::empty({ctx.world, experts}, counts.options());
    ctx.comm->all_gather(counts, all);
    std::vector<int64_t> per_rank = host_vector(all.view({ctx.world, ctx.world, local}).sum(-1));  // [src][dst]
    std::vector<int64_t> send, recv;
    for (int q = 0; q < ctx.world; ++q) {
      send.push_back(per_rank[ctx.rank * ctx.world + q]);
      recv.push_back(per_rank[q * ctx.world + ctx.rank]);
    }
    at::Tensor received = at::empty({std::accumulate(recv.begin(), recv.end(), int64_t{0}), x.size(1)}, x.options());
    ctx.comm->all_to_all(rows.contiguous(), received, send, recv);
    at::Tensor computed = expert_mlp(in, received).contiguous();  // all local experts share this rank's MLP
    results = at::empty_like(rows);
    ctx.comm->all_to_all(computed, results, recv, send);
  }
  at::Tensor weighted = weights.reshape({-1}).index_select(0, order).unsqueeze(1) * results;
  return {at::zeros_like(x).index_add_(0, token_of_row, weighted)};
}

// ---- oracle: per token in double, from the definition out[t] = sum over its top-k experts e of
// p_e * MLP_owner(e)(x_t); `mlp_double(w, x)` is the MLP of the rank whose inputs are w, in fp64 ----

inline std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in, ExpertMlp mlp_double) {
  const int W = ctx.world;
  const int64_t experts = ctx.scalar("num_experts"), top_k = ctx.scalar("top_k"), local = experts / W;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor x = in[r][0].to(at::kDouble);
    at::Tensor logits = (x.mm(in[r][1].to(at::kDouble).t()) + in[r][2].to(at::kDouble)).contiguous();
    auto lg = logits.accessor<double, 2>();
    const int64_t M = x.size(0);
    // weight[q][t]: total router weight token t gives to experts hosted on rank q
    std::vector<std::vector<double>> weight(W, std::vector<double>(M, 0.0));
    for (int64_t t = 0; t < M; ++t) {
      std::vector<int64_t> e(experts);
      std::iota(e.begin(), e.end(), int64_t{0});
      std::sort(e.begin(), e.end(), [&](int64_t a, int64_t b) { return lg[t][a] > lg[t][b]; });
      double denom = 0;
      for (int64_t j = 0; j < experts; ++j) denom += std::exp(lg[t][j] - lg[t][e[0]]);
      for (int64_t k = 0; k < top_k; ++k) weight[e[k] / local][t] += std::exp(lg[t][e[k]] - lg[t][e[0]]) / denom;
    }
    at::Tensor o = at::zeros({M, x.size(1)}, at::kDouble);
    for (int q = 0; q < W; ++q) {
      std::vector<int64_t> tokens;
      for (int64_t t = 0; t < M; ++t)
        if (weight[q][t] != 0) tokens.push_back(t);
      if (tokens.empty()) continue;
      at::Tensor idx = at::tensor(tokens, at::kLong),
                 w = at::empty({static_cast<int64_t>(tokens.size()), 1}, at::kDouble);
      for (size_t i = 0; i < tokens.size(); ++i) w[i][0] = weight[q][tokens[i]];
      o.index_add_(0, idx, w * mlp_double(in[q], x.index_select(0, idx)));
    }
    out.push_back({o});
  }
  return out;
}

// ---- prepare ----

// Spacing of bf16 values at |v|.
inline double bf16_ulp(double v) {
  int e;
  std::frexp(std::max(std::fabs(v), 1e-30), &e);  // |v| in [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 8);
}

// Margin the 2nd and 3rd logits must keep so that every formulation (fp32 or bf16 logits, bias fused or added
// after rounding, probabilities in fp32 or bf16) selects the same experts: three bf16 steps plus a little.
inline double margin(double a, double b) { return 3 * bf16_ulp(std::max(std::fabs(a), std::fabs(b))) + 0.05; }

inline float to_dtype(double v, at::ScalarType dtype) {
  float f = static_cast<float>(v);
  return dtype == at::kBFloat16 ? static_cast<float>(c10::BFloat16(f)) : f;
}

// The Linear layers in[3..8] become nn.Linear's U(-1/sqrt(in), 1/sqrt(in)) from U(-1, 1) draws, and the router
// weight N(0, 1/N) from N(0, 1) draws (logits of std ~ sqrt(2) with the bias).
inline void init_linear_layers(Tensors& raw) {
  const at::ScalarType dtype = raw[0].scalar_type();
  for (int i : {3, 4, 5, 6, 7, 8}) {
    const int64_t fan_in = raw[i % 2 == 1 ? i : i - 1].size(1);
    raw[i] = (raw[i].to(at::kFloat) / std::sqrt(static_cast<double>(fan_in))).to(dtype);
  }
  raw[1] = (raw[1].to(at::kFloat) / std::sqrt(static_cast<double>(raw[1].size(1)))).to(dtype);  // logits ~ N(0, 2)
}

// Token by token, the hidden row is nudged until its K-th and (K+1)-th router logits are a margin apart (the
// clause for a K-th probability below 1e-34, whose choice cannot move the output, is kept for other router
// scales). `slug` names the problem in the error when a token cannot be separated.
inline Tensors separate_router_logits(const OracleContext& ctx, int rank, Tensors raw, const std::string& slug) {
  const at::ScalarType dtype = raw[0].scalar_type();
  const int64_t K = ctx.scalar("top_k"), experts = ctx.scalar("num_experts");
  at::Tensor x = raw[0].to(at::kDouble).contiguous(), gw = raw[1].to(at::kDouble).contiguous();
  at::Tensor gb = raw[2].to(at::kDouble).contiguous();
  auto xa = x.accessor<double, 2>();
  auto wa = gw.accessor<double, 2>();
  auto ba = gb.accessor<double, 1>();
  const int64_t N = x.size(1);
  for (int64_t t = 0; t < x.size(0); ++t) {
    for (int attempt = 0;; ++attempt) {
      std::vector<double> l(experts);
      for (int64_t e = 0; e < experts; ++e) {
        l[e] = ba[e];
        for (int64_t i = 0; i < N; ++i) l[e] += xa[t][i] * wa[e][i];
      }
      std::vector<int64_t> order(experts);
      std::iota(order.begin(), order.end(), int64_t{0});
      std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return l[a] > l[b]; });
      const int64_t hi = order[K - 1], lo = order[K];
      if (l[order[0]] - l[hi] > 80 || l[hi] - l[lo] >= margin(l[hi], l[lo])) break;
      if (attempt == 1000)
        throw Error(slug + ": cannot separate the router logits of rank " + std::to_string(rank) + " token " +
                    std::to_string(t));
      // Move the element that separates the two experts most by a quarter, in the direction that widens the gap.
      int64_t best = 0;
      for (int64_t i = 1; i < N; ++i)
        if (std::fabs(wa[hi][i] - wa[lo][i]) > std::fabs(wa[hi][best] - wa[lo][best])) best = i;
      xa[t][best] = to_dtype(xa[t][best] + (wa[hi][best] > wa[lo][best] ? 0.25 : -0.25), dtype);
    }
  }
  raw[0] = x.to(dtype);
  return raw;
}

}  // namespace pkb::fused_moe
