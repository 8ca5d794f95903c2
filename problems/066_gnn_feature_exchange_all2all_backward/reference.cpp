#include "reference/reference.h"

namespace {

using namespace pkb;

std::vector<int64_t> host_vector(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU).to(at::kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int W = ctx.world, r = ctx.rank;
  const at::Tensor &grad = in[0], &ids = in[1];
  std::vector<int64_t> sent = host_vector(in[2]), received = host_vector(in[3]);
  std::vector<at::Tensor> blocks = at::split_with_sizes(grad, sent);
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
  at::Tensor got = at::empty({total, grad.size(1)}, grad.options());
  ctx.comm->all_to_all(at::cat(by_peer).contiguous(), got, send_rows, recv_rows);
  std::vector<at::Tensor> from_peer = at::split_with_sizes(got, recv_rows), ordered;
  for (int c = 0; c < W; ++c) ordered.push_back(from_peer[(r + c) % W]);
  at::Tensor out = at::zeros({ctx.scalar("seed_size"), grad.size(1)}, grad.options());
  return {out.index_add_(0, ids, at::cat(ordered))};
}

// fp64 loop: received row i of rank r (block c = i / R, row j) is row ((W - c) mod W) R + j of rank (r + c) mod W's
// gradient, added into seed ids_r[i].
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t seeds = ctx.scalar("seed_size");
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    const int64_t rows = in[r][1].size(0), R = rows / W, H = in[r][0].size(1);
    at::Tensor acc = at::zeros({seeds, H}, at::kDouble);
    auto a = acc.accessor<double, 2>();
    auto ids = in[r][1].accessor<int64_t, 1>();
    for (int64_t i = 0; i < rows; ++i) {
      const int c = static_cast<int>(i / R), s = (r + c) % W;
      auto g = in[s][0].accessor<float, 2>();
      const int64_t src = ((W - c) % W) * R + i % R;
      for (int64_t h = 0; h < H; ++h) a[ids[i]][h] += g[src][h];
    }
    out.push_back({acc.to(at::kFloat)});
  }
  return out;
}

}  // namespace

PKB_REGISTER_PROBLEM("gnn_feature_exchange_all2all_backward", reference, oracle);
