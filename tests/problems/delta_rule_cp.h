// Check-test kernels for the context-parallel delta-rule problems 74 and 75 (fla_kimi_delta_attention_cp_tp,
// fla_gated_deltanet_cp), which differ in their decay (74: per key channel; 75: per head) and its inputs: the fp32
// delta-rule recurrence, and every rank's outputs computed over the whole sequence (what an honest kernel
// returns) or over the rank's own positions from a zero state (a kernel that never communicates).
#pragma once

#include <functional>
#include <vector>

#include "problems/check_case.h"

namespace pkb::test {

// The delta rule in fp32 over (T, H, .) tensors, all heads at once, from a zero state S (H, Dk, Dv): per position
// S *= decay[t] (decay broadcasts against S: (T, H, Dk, 1) or (T, H, 1, 1)), then S += k (v - k S) b, out = q S.
// q, k, v are fp32 and q, k already normalised; b (T, H) is the write strength.
inline at::Tensor delta_rule(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& b,
                             const at::Tensor& decay) {
  at::Tensor S = at::zeros({q.size(1), q.size(2), v.size(2)});
  std::vector<at::Tensor> out;
  for (int64_t t = 0; t < q.size(0); ++t) {
    S = S * decay[t];
    at::Tensor u = (v[t] - at::bmm(k[t].unsqueeze(1), S).squeeze(1)) * b[t].unsqueeze(-1);
    S = S + k[t].unsqueeze(-1) * u.unsqueeze(1);
    out.push_back(at::bmm(q[t].unsqueeze(1), S).squeeze(1));
  }
  return at::stack(out);
}

// Rank r's output (1, L, ...) in bf16, from `attend` applied to inputs 0..4 (batch 1, each rank's L positions along
// dim 1): every rank's positions concatenated and rank r's slice kept (whole_sequence), or rank r's alone.
inline std::vector<Tensors> cp_outputs(const check_test::Case& c, bool whole_sequence,
                                       const std::function<at::Tensor(const Tensors& seq)>& attend) {
  auto seq = [&](int i, int r) {
    if (!whole_sequence) return c.inputs[r][i][0];
    std::vector<at::Tensor> parts;
    for (const auto& x : c.inputs) parts.push_back(x[i][0]);
    return at::cat(parts, 0);
  };
  std::vector<Tensors> got;
  const int64_t L = c.inputs[0][0].size(1);
  for (int r = 0; r < c.run.world; ++r) {
    at::Tensor o = attend({seq(0, r), seq(1, r), seq(2, r), seq(3, r), seq(4, r)});
    if (whole_sequence) o = o.slice(0, r * L, (r + 1) * L);
    got.push_back({o.unsqueeze(0).to(at::kBFloat16)});
  }
  return got;
}

}  // namespace pkb::test
