#include "reference/reference.h"

namespace {

using namespace pkb;

std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int W = ctx.world, r = ctx.rank;
  at::Tensor fetched = in[0].index_select(0, in[1]);
  std::vector<int64_t> sent = host_vector(in[2]), received = host_vector(in[3]);
  std::vector<at::Tensor> blocks = at::split_with_sizes(fetched, sent);
  // The communicator's splits are by peer; list position i is peer (r + i) mod W.
  std::vector<at::Tensor> by_peer;
  std::vector<int64_t> send_rows(W), recv_rows(W);
  for (int p = 0; p < W; ++p) {
    int i = ((p - r) % W + W) % W;
    by_peer.push_back(blocks[i]);
    send_rows[p] = sent[i];
    recv_rows[p] = received[i];
  }
  int64_t total = 0;
  for (int64_t n : recv_rows) total += n;
  at::Tensor got = at::empty({total, fetched.size(1)}, fetched.options());
  ctx.comm->all_to_all(at::cat(by_peer).contiguous(), got, send_rows, recv_rows);
  std::vector<at::Tensor> from_peer = at::split_with_sizes(got, recv_rows), ordered;
  for (int c = 0; c < W; ++c) ordered.push_back(from_peer[(r + c) % W]);
  return {at::cat(ordered)};
}

// out_r[block c] = features_s[ids_s[block (W - c) mod W]] with s = (r + c) mod W, row by row.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    const int64_t R = in[r][1].size(0) / W;
    at::Tensor o = at::empty({R * W, in[r][0].size(1)}, in[r][0].options());
    for (int c = 0; c < W; ++c) {
      const int s = (r + c) % W, block = (W - c) % W;
      auto ids = in[s][1].accessor<int64_t, 1>();
      for (int64_t j = 0; j < R; ++j) o[c * R + j].copy_(in[s][0][ids[block * R + j]]);
    }
    out.push_back({o});
  }
  return out;
}

}  // namespace

PKB_REGISTER_PROBLEM("gnn_feature_exchange_all2all", reference, oracle);
