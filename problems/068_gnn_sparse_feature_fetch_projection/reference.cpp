#include "reference/reference.h"

#include <numeric>

namespace problem_068 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int W = ctx.world;
  const at::Tensor &shard = in[0], &ids = in[1], &proj = in[2];
  const int64_t per_shard = (ctx.scalar("num_total_nodes") + W - 1) / W;
  at::Tensor owner = ids.div(per_shard, "floor").clamp_max(W - 1);
  at::Tensor order = std::get<1>(at::sort(owner, /*stable=*/true, /*dim=*/0, /*descending=*/false));
  at::Tensor send_ids = ids.index_select(0, order);

  at::Tensor send_counts = at::bincount(owner, {}, W);
  at::Tensor recv_counts = at::empty_like(send_counts);
  ctx.comm->all_to_all(send_counts, recv_counts);
  std::vector<int64_t> send = host_vector(send_counts), recv = host_vector(recv_counts);

  at::Tensor requested = at::empty({std::accumulate(recv.begin(), recv.end(), int64_t{0})}, ids.options());
  ctx.comm->all_to_all(send_ids, requested, send, recv);
  at::Tensor served = shard.index_select(0, requested - ctx.rank * per_shard);
  at::Tensor fetched = at::empty({ids.size(0), shard.size(1)}, shard.options());
  ctx.comm->all_to_all(served.contiguous(), fetched, recv, send);
  at::Tensor rows = at::empty_like(fetched).index_copy_(0, order, fetched);  // back to query order
  return {at::matmul(rows, proj)};
}

// fp64: the global row of each id read straight from its shard, times the rank's projection, rounded once.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    auto ids = in[r][1].accessor<int64_t, 1>();
    const int64_t Q = in[r][1].size(0), NS = in[0][0].size(0);
    at::Tensor rows = at::empty({Q, in[r][0].size(1)}, at::kDouble);
    for (int64_t q = 0; q < Q; ++q) rows[q].copy_(in[ids[q] / NS][0][ids[q] % NS]);
    out.push_back({at::mm(rows, in[r][2].to(at::kDouble)).to(ctx.float_dtype)});
  }
  return out;
}

PKB_REGISTER_PROBLEM("gnn_sparse_feature_fetch_projection", reference, oracle);

}  // namespace problem_068
