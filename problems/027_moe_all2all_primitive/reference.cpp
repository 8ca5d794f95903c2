#include "reference/reference.h"

namespace problem_027 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();  // split sizes live on the device: copy to the host
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  std::vector<int64_t> send = host_vector(in[1]), recv = host_vector(in[2]);
  int64_t rows = 0;
  for (int64_t n : recv) rows += n;
  at::Tensor out = at::empty({rows, in[0].size(1)}, in[0].options());
  ctx.comm->all_to_all(in[0].contiguous(), out, send, recv);
  return {out};
}

// Rank r's output: for each source q in order, the rows rank q addressed to r, located by q's own split sizes.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) {
    std::vector<at::Tensor> chunks;
    for (int q = 0; q < ctx.world; ++q) {
      auto sizes = in[q][1].accessor<int64_t, 1>();
      int64_t begin = 0;
      for (int j = 0; j < r; ++j) begin += sizes[j];
      chunks.push_back(in[q][0].slice(0, begin, begin + sizes[r]));
    }
    out.push_back({at::cat(chunks, 0)});
  }
  return out;
}

// A circulant split table from the shared draw: rank r sends c[(q - r) mod W] rows to rank q, with c[0] = M / W kept
// locally and the other M - M / W rows split in proportion to the shared random weights. Every row and column of
// the table sums to M, so every rank sends and receives M rows.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const int W = ctx.world;
  const int64_t M = ctx.param("M");
  auto weight = raw[1].accessor<int64_t, 1>();  // identical on every rank (replicated draw)
  std::vector<int64_t> c(W, 0);
  c[0] = M / W;
  int64_t rest = M - c[0], weight_sum = 0, given = 0;
  for (int i = 1; i < W; ++i) weight_sum += weight[i];
  for (int i = 1; i < W; ++i) given += c[i] = rest * weight[i] / weight_sum;
  for (int i = 1; given < rest; i = i % (W - 1) + 1, ++given) ++c[i];  // floor remainder, one row at a time
  at::Tensor send = at::empty({W}, at::kLong), recv = at::empty({W}, at::kLong);
  for (int q = 0; q < W; ++q) {
    send[q] = c[(q - rank + W) % W];
    recv[q] = c[(rank - q + W) % W];
  }
  raw[1] = send;
  raw[2] = recv;
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("moe_all2all_primitive", reference, oracle, prepare);

}  // namespace problem_027
