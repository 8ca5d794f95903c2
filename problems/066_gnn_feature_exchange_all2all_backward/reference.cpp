#include "reference/reference.h"

#include "reference/rotated_all_to_all.h"

namespace problem_066 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int r = ctx.rank;
  const at::Tensor &grad = in[0], &ids = in[1];
  at::Tensor received = rotated_all_to_all(*ctx.comm, r, grad, host_int64s(in[2]), host_int64s(in[3]));
  at::Tensor out = at::zeros({ctx.scalar("seed_size"), grad.size(1)}, grad.options());
  return {out.index_add_(0, ids, received)};
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

PKB_REGISTER_PROBLEM("gnn_feature_exchange_all2all_backward", reference, oracle);

}  // namespace problem_066
