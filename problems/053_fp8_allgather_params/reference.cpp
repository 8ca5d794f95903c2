#include "reference/fp8_scaling.h"

// FP8 delayed scaling (harness/src/reference/fp8_scaling.h: the round trip, its fp64 twin, prepare; shared with
// problem 52), then the dequantised parameters all-gathered.
namespace problem_053 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  auto [recon, history] = fp8_scaling::fp8_roundtrip(in[0], in[1]);
  at::Tensor full = at::empty({recon.numel() * ctx.world}, recon.options());
  ctx.comm->all_gather(recon.contiguous(), full);
  return {full, history};
}

// fp64: every rank's dequantised vector in rank order, on every rank.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  auto [recon, history] = fp8_scaling::roundtrip64_ranks(in);
  at::Tensor full = at::cat(recon);
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) out.push_back({full, history[r]});
  return out;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("fp8_allgather_params", reference, oracle, fp8_scaling::prepare);

}  // namespace problem_053
