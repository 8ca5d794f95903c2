#include <algorithm>
#include <numeric>

#include "reference/moe_all2all.h"

// MoE combine (the all-to-all after the experts, then the weighted sum). The count table, the sorted assignments
// and the split sizes that prepare derives from the shared draw are problem 28's too
// (harness/src/reference/moe_all2all.h).
namespace problem_029 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &expert_outputs = in[0], &routing_weights = in[1], &selected = in[2];
  const int W = ctx.world;
  const int64_t experts = ctx.scalar("num_experts"), local = experts / W;

  // expert_outputs hold (local expert j, source s) chunks in (j, s) order; regroup them into (s, j) order.
  std::vector<int64_t> table = moe_all2all::host_vector(in[5]), js_sizes;  // table[s * L + j]
  for (int64_t j = 0; j < local; ++j)
    for (int s = 0; s < W; ++s) js_sizes.push_back(table[s * local + j]);
  std::vector<at::Tensor> chunks = at::split_with_sizes(expert_outputs, js_sizes), regrouped;
  for (int s = 0; s < W; ++s)
    for (int64_t j = 0; j < local; ++j) regrouped.push_back(chunks[j * W + s]);

  // Back to the ranks that dispatched: the dispatch's output splits are now the send sizes and vice versa.
  std::vector<int64_t> send = moe_all2all::host_vector(in[4]), recv = moe_all2all::host_vector(in[3]);
  at::Tensor returned = at::empty({std::accumulate(recv.begin(), recv.end(), int64_t{0}), expert_outputs.size(1)},
                                  expert_outputs.options());
  ctx.comm->all_to_all(at::cat(regrouped, 0).contiguous(), returned, send, recv);

  // Weight of (token, expert) in the permuted (expert-major, token-ascending) order, then a bf16 scatter-add.
  std::vector<int64_t> shape = moe_all2all::host_vector(in[8]);
  at::Tensor weights = at::zeros({shape[0], experts}, routing_weights.options()).scatter(1, selected, routing_weights);
  at::Tensor permuted_weights = weights.t().contiguous().masked_select(in[6]);
  at::Tensor weighted = returned * permuted_weights.unsqueeze(1);  // rounded per row, as PyTorch does
  at::Tensor out = at::zeros(shape, returned.options()).index_add(0, in[7], weighted);
  return {out};
}

// In fp64, per rank r and expert e: the rows of r's tokens for e sit in the owner's expert_outputs at chunk (j, r)
// of its (j, s)-ordered chunks (sizes from the owner's table), tokens ascending; each is weighted and summed.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t experts = ctx.scalar("num_experts"), local = experts / W;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    const int64_t M = in[r][1].size(0), K = in[r][1].size(1), N = in[r][0].size(1);
    at::Tensor acc = at::zeros({M, N}, at::kDouble);
    auto map = in[r][6].accessor<bool, 2>();
    auto sel = in[r][2].accessor<int64_t, 2>();
    at::Tensor rw = in[r][1].to(at::kDouble);
    auto w = rw.accessor<double, 2>();
    for (int64_t e = 0; e < experts; ++e) {
      const int q = static_cast<int>(e / local);
      const int64_t j = e % local;
      auto table = in[q][5].accessor<int64_t, 2>();  // owner's counts [s][j]
      int64_t offset = 0;
      for (int64_t jj = 0; jj <= j; ++jj)
        for (int s = 0; s < W && !(jj == j && s == r); ++s) offset += table[s][jj];
      std::vector<int64_t> tokens;
      std::vector<double> weight;
      for (int64_t t = 0; t < M; ++t) {
        if (!map[e][t]) continue;
        tokens.push_back(t);
        double wt = 0;
        for (int64_t k = 0; k < K; ++k)
          if (sel[t][k] == e) wt = w[t][k];
        weight.push_back(wt);
      }
      const auto n = static_cast<int64_t>(tokens.size());
      at::Tensor rows = in[q][0].slice(0, offset, offset + n).to(at::kDouble);
      acc.index_add_(0, at::tensor(tokens, at::kLong), rows * at::tensor(weight, at::kDouble).unsqueeze(1));
    }
    out.push_back({acc.to(ctx.float_dtype)});
  }
  return out;
}

// Routing consistent with the shared count table (as in problem 28): the K*M assignments sorted by expert are
// dealt to tokens in a random order, assignment i + k*M to the i-th token, so a token's experts are distinct
// (no count exceeds M) and come out ascending. Router weights: softmax over the K slots of the normal draws.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const int W = ctx.world;
  const int64_t experts = ctx.param("NE"), K = ctx.param("K"), M = ctx.param("M"), N = ctx.param("N");
  const int64_t local = experts / W;
  auto cnt = moe_all2all::count_table(raw[3], W, experts, K * M, /*seed=*/0x29);
  std::vector<int64_t> sorted_experts = moe_all2all::sorted_experts(cnt, rank, M, "moe_post_all2all");
  auto key = raw[2].accessor<int64_t, 2>();  // this rank's random draws order the tokens
  std::vector<int64_t> order(M);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return key[x][0] < key[y][0]; });
  at::Tensor selected = at::empty({M, K}, at::kLong), map = at::zeros({experts, M}, at::kBool);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      selected[order[i]][k] = sorted_experts[k * M + i];
      map[sorted_experts[k * M + i]][order[i]] = true;
    }
  std::vector<int64_t> perm;
  auto m = map.accessor<bool, 2>();
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t t = 0; t < M; ++t)
      if (m[e][t]) perm.push_back(t);
  auto [send, recv, table] = moe_all2all::splits_of(cnt, rank, W, local);
  at::Tensor weights = at::softmax(raw[1].to(at::kFloat), 1).to(raw[1].scalar_type());
  return {raw[0],
          weights,
          selected,
          send,
          recv,
          table,
          map,
          at::tensor(perm, at::kLong),
          at::tensor(std::vector<int64_t>{M, N}, at::kLong)};
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("moe_post_all2all", reference, oracle, prepare);

}  // namespace problem_029
