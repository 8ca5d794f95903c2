#include "reference/reference.h"

#include <algorithm>
#include <numeric>

namespace problem_010 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

std::vector<int64_t> to_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor& indices = in[0];
  const at::Tensor& shard = in[1];
  int64_t rows_per_shard = shard.size(0);

  // Stable partition by owner (rank q owns [q*M, (q+1)*M)): masked_select keeps query order within each owner.
  std::vector<at::Tensor> per_owner;
  std::vector<int64_t> send_counts;
  for (int q = 0; q < ctx.world; ++q) {
    at::Tensor mine = (indices >= q * rows_per_shard).logical_and(indices < (q + 1) * rows_per_shard);
    per_owner.push_back(indices.masked_select(mine));
    send_counts.push_back(per_owner.back().numel());
  }
  at::Tensor send_counts_t = at::tensor(send_counts, at::kLong).to(ctx.device);
  at::Tensor recv_counts_t = at::empty_like(send_counts_t);
  ctx.comm->all_to_all(send_counts_t, recv_counts_t);
  std::vector<int64_t> recv_counts = to_vector(recv_counts_t);

  // Send the requests to their owners; serve the requests that arrive from the local shard.
  at::Tensor requested =
      at::empty({std::accumulate(recv_counts.begin(), recv_counts.end(), int64_t{0})}, indices.options());
  ctx.comm->all_to_all(at::cat(per_owner), requested, send_counts, recv_counts);
  at::Tensor local_rows = (requested - ctx.rank * rows_per_shard).clamp(0, rows_per_shard - 1);
  at::Tensor served = shard.index_select(0, local_rows);

  // Rows come back grouped by owner, in the order they were requested.
  at::Tensor out = at::empty({indices.size(0), shard.size(1)}, shard.options());
  ctx.comm->all_to_all(served, out, recv_counts, send_counts);
  return {out};
}

// The global table is every shard stacked in rank order; rank r's output is its indices stably sorted by owner.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> shards;
  for (const auto& rank_inputs : in) shards.push_back(rank_inputs[1]);
  at::Tensor table = at::cat(shards);
  int64_t rows_per_shard = in[0][1].size(0);
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) {
    std::vector<int64_t> idx = to_vector(in[r][0]);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](int64_t a, int64_t b) { return a / rows_per_shard < b / rows_per_shard; });
    out.push_back({table.index_select(0, at::tensor(idx, at::kLong))});
  }
  return out;
}

PKB_REGISTER_PROBLEM("embedding_lookup", reference, oracle);

}  // namespace problem_010
