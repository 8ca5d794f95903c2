#include "reference/ring_attention.h"

// The ring-attention pieces are shared with problems 54-56: harness/src/reference/ring_attention.h.
namespace problem_054 {  // named, not anonymous: the references build as unity batches

using namespace pkb;
using namespace pkb::ring;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  auto [k_all, v_all] = gather_kv(*ctx.comm, in[1], in[2]);  // what the ring delivers, gathered at once
  return {ring_attention(in[0], k_all, v_all, ctx.rank, softmax_scale(in[0])).to(in[0].scalar_type())};
}

// fp64 causal softmax attention over the whole sequence (ranks' shards concatenated), sliced back per rank.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> q, k, v;
  for (const auto& r : in) {
    q.push_back(r[0].to(at::kDouble));
    k.push_back(r[1].to(at::kDouble));
    v.push_back(r[2].to(at::kDouble));
  }
  at::Tensor out = dense_causal64(at::cat(q, 1), at::cat(k, 1), at::cat(v, 1), softmax_scale(q[0]));
  int64_t s = in[0][0].size(1);
  std::vector<Tensors> result;
  for (int r = 0; r < ctx.world; ++r) result.push_back({out.slice(1, r * s, (r + 1) * s)});
  return result;
}

PKB_REGISTER_PROBLEM("ring_attention", reference, oracle);

}  // namespace problem_054
