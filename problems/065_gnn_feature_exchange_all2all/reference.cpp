#include "reference/reference.h"

#include "reference/rotated_all_to_all.h"

namespace problem_065 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int r = ctx.rank;
  at::Tensor fetched = in[0].index_select(0, in[1]);
  at::Tensor received = rotated_all_to_all(*ctx.comm, r, fetched, host_int64s(in[2]), host_int64s(in[3]));
  return {received};
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

PKB_REGISTER_PROBLEM("gnn_feature_exchange_all2all", reference, oracle);

}  // namespace problem_065
