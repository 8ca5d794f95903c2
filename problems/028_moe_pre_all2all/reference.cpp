#include <algorithm>
#include <numeric>

#include "reference/moe_all2all.h"

// MoE dispatch (the all-to-all before the experts). The count table, the sorted assignments and the split sizes
// that prepare derives from the shared draw are problem 29's too (harness/src/reference/moe_all2all.h).
namespace problem_028 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &hidden = in[0], &mask = in[1];
  const int64_t experts = ctx.scalar("num_experts"), local = experts / ctx.world;
  at::Tensor routing_map = mask.sum(1);  // (E, M) fp32 0/1
  at::Tensor token_ids =
      at::arange(hidden.size(0), routing_map.options().dtype(at::kLong)).unsqueeze(0).expand({experts, -1});
  at::Tensor perm = token_ids.masked_select(routing_map.to(at::kBool));  // expert-major, tokens ascending
  at::Tensor permuted = hidden.index_select(0, perm);

  std::vector<int64_t> send = moe_all2all::host_vector(in[2]), recv = moe_all2all::host_vector(in[3]);
  at::Tensor received =
      at::empty({std::accumulate(recv.begin(), recv.end(), int64_t{0}), hidden.size(1)}, hidden.options());
  ctx.comm->all_to_all(permuted.contiguous(), received, send, recv);

  // Received chunks are in (source s, local expert j) order; emit them in (j, s) order.
  std::vector<at::Tensor> chunks = at::split_with_sizes(received, moe_all2all::host_vector(in[4]));
  std::vector<at::Tensor> regrouped;
  for (int64_t j = 0; j < local; ++j)
    for (int s = 0; s < ctx.world; ++s) regrouped.push_back(chunks[s * local + j]);
  at::Tensor shape = at::tensor(std::vector<int64_t>{hidden.size(0), hidden.size(1)}, at::kLong);
  return {at::cat(regrouped, 0), routing_map, perm, shape};
}

// The tokens of rank s routed to expert e, ascending, read off s's mask.
std::vector<int64_t> tokens_of(const at::Tensor& mask, int64_t e) {
  auto a = mask.accessor<float, 3>();
  std::vector<int64_t> tokens;
  for (int64_t t = 0; t < mask.size(2); ++t) {
    bool hit = false;
    for (int64_t k = 0; k < mask.size(1); ++k) hit |= a[e][k][t] != 0;
    if (hit) tokens.push_back(t);
  }
  return tokens;
}

// Every rank's outputs from the masks alone: rank r's rows are, for each local expert j and source rank s,
// rank s's hidden rows of the tokens it routed to expert r*L + j.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t experts = ctx.scalar("num_experts"), local = experts / W;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    std::vector<at::Tensor> rows;
    for (int64_t j = 0; j < local; ++j)
      for (int s = 0; s < W; ++s)
        rows.push_back(in[s][0].index_select(0, at::tensor(tokens_of(in[s][1], r * local + j), at::kLong)));
    std::vector<int64_t> perm;
    at::Tensor routing_map = at::zeros({experts, in[r][1].size(2)}, at::kFloat);
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t t : tokens_of(in[r][1], e)) {
        perm.push_back(t);
        routing_map[e][t] = 1.0;
      }
    out.push_back({at::cat(rows, 0), routing_map, at::tensor(perm, at::kLong),
                   at::tensor(std::vector<int64_t>{in[r][0].size(0), in[r][0].size(1)}, at::kLong)});
  }
  return out;
}

// Routing of this rank consistent with the shared count table: the K*M assignments, sorted by expert, are dealt
// to tokens in a random order, assignment i + k*M going to the i-th token. No expert has more than M assignments,
// so a token's K experts are distinct. Slot order is then rotated at random per token.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const int W = ctx.world;
  const int64_t experts = ctx.param("NE"), K = ctx.param("K"), M = ctx.param("M"), local = experts / W;
  auto cnt = moe_all2all::count_table(raw[2], W, experts, K * M, /*seed=*/0x28);
  std::vector<int64_t> sorted_experts = moe_all2all::sorted_experts(cnt, rank, M, "moe_pre_all2all");
  auto u = raw[1].accessor<float, 3>();  // this rank's uniform draws: token order and slot rotation
  std::vector<int64_t> order(M);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return u[0][0][x] < u[0][0][y]; });
  at::Tensor mask = at::zeros({experts, K, M}, at::kFloat);
  auto m = mask.accessor<float, 3>();
  for (int64_t i = 0; i < M; ++i) {
    int64_t t = order[i], rotate = std::min<int64_t>(K - 1, static_cast<int64_t>(u[experts - 1][K - 1][t] * K));
    for (int64_t k = 0; k < K; ++k) m[sorted_experts[k * M + i]][(k + rotate) % K][t] = 1;
  }
  auto [send, recv, table] = moe_all2all::splits_of(cnt, rank, W, local);
  return {raw[0], mask, send, recv, table};
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("moe_pre_all2all", reference, oracle, prepare);

}  // namespace problem_028
