#include "reference/reference.h"

#include <numeric>

#include "core/error.h"

namespace problem_067 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int W = ctx.world;
  const at::Tensor &idx = in[0], &value = in[1];
  at::Tensor owner = idx.remainder(W);
  at::Tensor order = std::get<1>(at::sort(owner, /*stable=*/true, /*dim=*/0, /*descending=*/false));
  at::Tensor send_idx = idx.index_select(0, order), send_value = value.index_select(0, order);

  at::Tensor send_counts = at::bincount(owner, {}, W);
  at::Tensor recv_counts = at::empty_like(send_counts);
  ctx.comm->all_to_all(send_counts, recv_counts);
  std::vector<int64_t> send = host_vector(send_counts), recv = host_vector(recv_counts);
  const int64_t total = std::accumulate(recv.begin(), recv.end(), int64_t{0});

  at::Tensor recv_idx = at::empty({total}, idx.options());
  ctx.comm->all_to_all(send_idx, recv_idx, send, recv);
  at::Tensor recv_value = at::empty({total, value.size(1)}, value.options());
  ctx.comm->all_to_all(send_value.contiguous(), recv_value, send, recv);
  return {recv_idx, recv_value};
}

// Rank r's outputs: walk every source s in order and take its entries with idx mod W == r, in list order.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    std::vector<int64_t> ids;
    std::vector<at::Tensor> rows;
    for (int s = 0; s < W; ++s) {
      auto a = in[s][0].accessor<int64_t, 1>();
      for (int64_t i = 0; i < in[s][0].size(0); ++i)
        if (a[i] % W == r) ids.push_back(a[i]), rows.push_back(in[s][1][i]);
    }
    if (static_cast<int64_t>(ids.size()) != in[r][0].size(0))
      throw pkb::Error("gnn_sparse_embedding_all2all: rank " + std::to_string(r) + " receives " +
                       std::to_string(ids.size()) + " entries, not NNZ");
    out.push_back({at::tensor(ids, at::kLong), at::stack(rows)});
  }
  return out;
}

// Entries rank s sends to rank (s + d) mod W: NNZ / W kept locally, the rest split in proportion to d = 1..W-1
// (remainder to the last offset). Every rank receives sum_d c[d] = NNZ.
std::vector<int64_t> count_table(int64_t nnz, int W) {
  std::vector<int64_t> c(W, 0);
  c[0] = nnz / W;
  const int64_t rest = nnz - c[0], weight = static_cast<int64_t>(W) * (W - 1) / 2;
  int64_t given = c[0];
  for (int d = 1; d < W; ++d) given += c[d] = rest * d / weight;
  c[W - 1] += nnz - given;
  return c;
}

// Owners from the count table, assigned in the order of a hash of the drawn ids (a random interleaving); each
// id keeps its drawn high part: idx = (idx div W) W + owner.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const int W = ctx.world;
  at::Tensor idx = raw[0].contiguous();
  auto a = idx.accessor<int64_t, 1>();
  const int64_t nnz = idx.size(0);
  std::vector<int64_t> order(nnz);
  std::iota(order.begin(), order.end(), int64_t{0});
  auto key = [&](int64_t i) { return static_cast<uint64_t>(a[i] * 2 + 1) * 0x9E3779B97F4A7C15ull; };
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return key(x) < key(y); });
  std::vector<int64_t> c = count_table(nnz, W);
  int64_t pos = 0;
  for (int d = 0; d < W; ++d)
    for (int64_t k = 0; k < c[d]; ++k, ++pos) {
      int64_t i = order[pos];
      a[i] = (a[i] / W) * W + (rank + d) % W;
    }
  raw[0] = idx;
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("gnn_sparse_embedding_all2all", reference, oracle, prepare);

}  // namespace problem_067
