#include "reference/fp8_scaling.h"

// FP8 delayed scaling (harness/src/reference/fp8_scaling.h: the round trip, its fp64 twin, prepare; shared with
// problem 53), then the dequantised gradients reduce-scattered and averaged over the ranks.
namespace problem_052 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  auto [recon, history] = fp8_scaling::fp8_roundtrip(in[0], in[1]);
  at::Tensor shard = at::empty({recon.numel() / ctx.world}, recon.options());
  ctx.comm->reduce_scatter(recon.contiguous(), shard, ReduceOp::sum);
  return {shard / static_cast<double>(ctx.world), history};
}

// fp64: the mean of every rank's dequantised vector, rank r's shard of it.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  auto [recon, history] = fp8_scaling::roundtrip64_ranks(in);
  at::Tensor mean = at::stack(recon).mean(0);
  int64_t shard = mean.numel() / ctx.world;
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) out.push_back({mean.slice(0, r * shard, (r + 1) * shard), history[r]});
  return out;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("fp8_reduce_scatter_grads", reference, oracle, fp8_scaling::prepare);

}  // namespace problem_052
