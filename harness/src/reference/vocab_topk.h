// Vocab-parallel log-probs under vLLM's top-k / top-p filter, as problems 82-84 compute them
// (vocab_parallel_log_prob_topk, its chunked variant and the chunked backward): the PyTorch-semantics filter the
// references use, the exact filter the oracles and prepare use, the token exchange, and the prepare that makes
// every filter decision robust.
//
// Known limit: prepare builds each full logit row from a hash of the replicated targets (every rank must see the
// whole row to place the top-p boundary away from rounding), so the per-rank raw draw of the logits is unused.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/splitmix.h"
#include "reference/reference.h"

namespace pkb::vocab_topk {

constexpr double kTopP = 0.9;         // PKB's value (a defaulted keyword in reference.py)
constexpr double kTargetBoost = 3.0;  // added to the target's logit (PKB: 8, which leaves only the target kept)
constexpr double kMargin = 0.01;      // prepared rows keep every top-p cumulative sum this far from 1 - top_p

// ---- the reference side: PyTorch's ops on the run dtype, as vLLM's apply_top_k_top_p ----

// rows (n, V) in the run dtype -> filtered logits (n, V), -inf outside the kept set. Ascending sort; the k-th largest
// value is the threshold (ties kept); softmax and cumsum in the dtype; positions whose cumulative sum is
// <= 1 - top_p are dropped, the largest always kept.
inline at::Tensor filter_like_pytorch(const at::Tensor& rows, int64_t top_k) {
  auto [sorted, order] = at::sort(rows, -1, /*descending=*/false);
  at::Tensor threshold = sorted.select(-1, rows.size(-1) - top_k).unsqueeze(-1);
  sorted = sorted.masked_fill(sorted < threshold, -INFINITY);
  at::Tensor cumulative = at::softmax(sorted, -1).cumsum(-1);
  at::Tensor drop = cumulative <= 1.0 - kTopP;
  drop.select(-1, rows.size(-1) - 1).fill_(false);
  sorted = sorted.masked_fill(drop, -INFINITY);
  return at::empty_like(rows).scatter_(-1, order, sorted);
}

// Full-vocab rows (n / W, V) of this rank's share of the n tokens in `local` (n, V / W): one all-to-all.
inline at::Tensor gather_rows(Communicator& comm, const at::Tensor& local) {
  const int64_t w = comm.size(), n = local.size(0), vl = local.size(1);
  at::Tensor received = at::empty({w, n / w, vl}, local.options());
  comm.all_to_all(local.contiguous(), received);
  return received.permute({1, 0, 2}).reshape({n / w, w * vl});
}

// The inverse: this rank's rows (n / W, V) -> every rank's tokens' slices of this rank's vocab (n, V / W).
inline at::Tensor scatter_rows(Communicator& comm, const at::Tensor& rows) {
  const int64_t w = comm.size(), m = rows.size(0), vl = rows.size(1) / w;
  at::Tensor send = rows.view({m, w, vl}).permute({1, 0, 2}).contiguous();
  at::Tensor received = at::empty({w * m, vl}, rows.options());
  comm.all_to_all(send, received);
  return received;
}

// ---- the definition side (oracles, prepare): one row in double ----

struct RowFilter {
  std::vector<bool> kept;  // after top-k and top-p
  bool robust = true;      // every top-p decision is at least kMargin from the threshold, no tie across it
};

// Exact filter of one row: top-k with ties, exact probabilities of the kept values, ascending cumulative sums.
inline RowFilter filter_exact(const std::vector<double>& row, int64_t top_k) {
  const int64_t v = static_cast<int64_t>(row.size());
  std::vector<int64_t> order(v);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return row[a] < row[b]; });
  const double threshold = row[order[v - top_k]];
  std::vector<int64_t> candidates;
  for (int64_t i : order)
    if (row[i] >= threshold) candidates.push_back(i);
  double top = row[candidates.back()], sum = 0;
  for (int64_t i : candidates) sum += std::exp(row[i] - top);
  RowFilter f;
  f.kept.assign(v, false);
  double cumulative = 0;
  int64_t last_dropped = -1;
  for (size_t j = 0; j < candidates.size(); ++j) {
    cumulative += std::exp(row[candidates[j]] - top) / sum;
    bool last = j + 1 == candidates.size();
    if (!last && std::fabs(cumulative - (1.0 - kTopP)) < kMargin) f.robust = false;
    if (!last && cumulative <= 1.0 - kTopP) {
      last_dropped = static_cast<int64_t>(j);
    } else {
      f.kept[candidates[j]] = true;
    }
  }
  if (last_dropped >= 0 && row[candidates[last_dropped]] == row[candidates[last_dropped + 1]]) f.robust = false;
  return f;
}

// All ranks' slices (B, S, V / W) of the run dtype concatenated in rank order -> (B S, V) in double.
inline at::Tensor full_rows(const std::vector<Tensors>& in) {
  std::vector<at::Tensor> slices;
  for (const auto& r : in) slices.push_back(r[0].to(at::kDouble).reshape({-1, r[0].size(-1)}));
  return at::cat(slices, 1).contiguous();
}

// The softmax over a row's kept set, in double: the row's max and the sum of exp(row[v] - top) over kept v.
struct KeptSoftmax {
  double top = 0, sum = 0;
  double log_prob(double logit) const { return logit - top - std::log(sum); }
  double prob(double logit) const { return std::exp(logit - top) / sum; }
};
inline KeptSoftmax kept_softmax(const std::vector<double>& row, const std::vector<bool>& kept) {
  KeptSoftmax s;
  s.top = *std::max_element(row.begin(), row.end());
  for (size_t v = 0; v < row.size(); ++v)
    if (kept[v]) s.sum += std::exp(row[v] - s.top);
  return s;
}

inline std::vector<double> row_vector(const at::Tensor& rows, int64_t t) {
  at::Tensor row = rows[t].contiguous();
  return std::vector<double>(row.data_ptr<double>(), row.data_ptr<double>() + row.numel());
}

// ---- prepare ----

// N(0, 1) for counter `i` of stream `seed` (Box-Muller on two hashed uniforms).
inline double hashed_normal(uint64_t seed, uint64_t i) {
  auto uniform = [&](uint64_t j) {
    return (static_cast<double>(splitmix64(seed ^ splitmix64(j)) >> 11) + 0.5) * 0x1p-53;
  };
  return std::sqrt(-2 * std::log(uniform(2 * i))) * std::cos(2 * M_PI * uniform(2 * i + 1));
}

// raw[0]: this rank's logits (B, S, V / W) in the run dtype; raw[1]: the targets (B, S), replicated. Every rank builds
// the same full rows from a hash of all targets (so they change with every trial's draw): N(0, 1) logits in the
// dtype, kTargetBoost added (in the dtype) at the target, redrawn until the target survives the filter and every
// decision is robust; rank r keeps its vocab slice [r V / W, (r + 1) V / W).
inline Tensors prepare_logits(const OracleContext& ctx, int rank, Tensors raw, int64_t top_k) {
  const auto dtype = raw[0].scalar_type();
  const int64_t vl = raw[0].size(-1), v = vl * ctx.world, tokens = raw[1].numel();
  at::Tensor targets = raw[1].reshape({-1}).contiguous();
  const int64_t* target = targets.data_ptr<int64_t>();
  uint64_t seed = 0x5eed0082ull;
  for (int64_t t = 0; t < tokens; ++t) seed = splitmix64(seed ^ static_cast<uint64_t>(target[t]));
  at::Tensor rows = at::empty({tokens, v}, at::kFloat);
  for (int64_t t = 0; t < tokens; ++t) {
    for (uint64_t attempt = 0;; ++attempt) {
      if (attempt == 1000) throw Error("vocab_topk prepare: no robust row in 1000 draws");
      at::Tensor z = at::empty({v}, at::kDouble);
      for (int64_t i = 0; i < v; ++i)
        z[i] = hashed_normal(splitmix64(seed + static_cast<uint64_t>(t)) ^ attempt, static_cast<uint64_t>(i));
      at::Tensor row = z.to(dtype);
      row[target[t]] = (row[target[t]] + kTargetBoost);
      row = row.to(at::kDouble);
      RowFilter f = filter_exact(std::vector<double>(row.data_ptr<double>(), row.data_ptr<double>() + v), top_k);
      if (!f.robust || !f.kept[target[t]]) continue;
      rows[t] = row.to(at::kFloat);
      break;
    }
  }
  raw[0] = rows.slice(1, rank * vl, (rank + 1) * vl).reshape(raw[0].sizes()).to(dtype).contiguous();
  return raw;
}

// Problems 82 and 83 share their oracle (83's chunking changes how the reference computes, not what): per token
// in double, the exact filter, then the target's logit minus the log-sum-exp of the kept values.
inline std::vector<Tensors> log_prob_oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  at::Tensor rows = full_rows(in), target = in[0][1].reshape({-1});
  at::Tensor out = at::empty({rows.size(0)}, at::kDouble);
  for (int64_t t = 0; t < rows.size(0); ++t) {
    std::vector<double> row = row_vector(rows, t);
    KeptSoftmax s = kept_softmax(row, filter_exact(row, ctx.scalar("top_k")).kept);
    out[t] = s.log_prob(row[target[t].item<int64_t>()]);
  }
  return std::vector<Tensors>(ctx.world, Tensors{out.view(in[0][1].sizes()).to(at::kFloat)});
}

// The prepare of 82-84: the logits from prepare_logits at the run's top_k.
inline Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  return prepare_logits(ctx, rank, std::move(raw), ctx.scalar("top_k"));
}

}  // namespace pkb::vocab_topk
