#include "reference/reference.h"

namespace problem_026 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int64_t experts = ctx.scalar("num_experts"), local = experts / ctx.world;
  at::Tensor counts = in[0].sum({1, 2});  // (E,) fp32: assignments per expert on this rank
  at::Tensor input_splits = counts.view({ctx.world, local}).sum(1).to(at::kLong);
  at::Tensor gathered = at::empty({ctx.world, experts}, counts.options());
  ctx.comm->all_gather(counts.contiguous(), gathered);
  at::Tensor per_local = gathered.slice(1, ctx.rank * local, (ctx.rank + 1) * local).contiguous();  // (W, L)
  return {input_splits, per_local.sum(1).to(at::kLong), per_local, per_local.sum(0)};
}

// Integer counts straight from every rank's mask: count[q][e] = number of (slot, token) with mask[e, slot, token] != 0.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t experts = ctx.scalar("num_experts"), local = experts / W;
  std::vector<std::vector<int64_t>> count(W, std::vector<int64_t>(experts, 0));
  for (int q = 0; q < W; ++q) {
    at::Tensor mask = in[q][0].contiguous();
    auto a = mask.accessor<float, 3>();
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t k = 0; k < mask.size(1); ++k)
        for (int64_t t = 0; t < mask.size(2); ++t) count[q][e] += a[e][k][t] != 0;
  }
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor in_splits = at::zeros({W}, at::kLong), out_splits = at::zeros({W}, at::kLong);
    at::Tensor per_local = at::zeros({W, local}, at::kFloat), total = at::zeros({local}, at::kFloat);
    for (int q = 0; q < W; ++q)
      for (int64_t j = 0; j < local; ++j) {
        in_splits[q] += count[r][q * local + j];   // r -> experts of q
        out_splits[q] += count[q][r * local + j];  // q -> experts of r
        per_local[q][j] = static_cast<double>(count[q][r * local + j]);
        total[j] += static_cast<double>(count[q][r * local + j]);
      }
    out.push_back({in_splits, out_splits, per_local, total});
  }
  return out;
}

// One-hot routing: every (slot, token) picks the expert with the largest uniform draw, i.e. a uniform random expert.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const int64_t experts = raw[0].size(0);
  raw[0] = at::one_hot(raw[0].argmax(0), experts).permute({2, 0, 1}).to(at::kFloat).contiguous();
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("moe_token_preprocess", reference, oracle, prepare);

}  // namespace problem_026
