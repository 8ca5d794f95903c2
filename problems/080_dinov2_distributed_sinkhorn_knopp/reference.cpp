#include "reference/reference.h"

namespace problem_080 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

constexpr double kTeacherTemp = 0.07;  // PKB's value (a defaulted keyword in reference.py)

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor q = at::exp(in[0].to(at::kFloat) / kTeacherTemp).t();  // (K, B)
  const double prototypes = static_cast<double>(q.size(0));
  at::Tensor batch = in[1].to(at::kFloat);
  ctx.comm->all_reduce(batch);

  at::Tensor total = q.sum();
  ctx.comm->all_reduce(total);
  q = q / total;

  for (int64_t it = 0; it < ctx.scalar("n_iterations"); ++it) {
    at::Tensor row_sums = q.sum(1, /*keepdim=*/true).contiguous();
    ctx.comm->all_reduce(row_sums);
    q = q / row_sums / prototypes;
    q = q / q.sum(0, /*keepdim=*/true) / batch;
  }
  return {(q * batch).t().contiguous()};
}

// fp64 scaling vectors over all ranks' samples at once: P = diag(a) E diag(b), the row step a = 1 / (K E b), the
// column step b = 1 / (Btot E^T a); the output column of sample j is a_i E_ij / sum_i a_i E_ij.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> blocks;
  double btot = 0;
  for (const auto& r : in) {
    blocks.push_back(at::exp(r[0].to(at::kDouble) / kTeacherTemp).t());
    btot += r[1].item<double>();
  }
  at::Tensor e = at::cat(blocks, 1);  // (K, W B)
  const double prototypes = static_cast<double>(e.size(0));
  at::Tensor a = at::ones({e.size(0)}, e.options()), b = at::ones({e.size(1)}, e.options());
  for (int64_t it = 0; it < ctx.scalar("n_iterations"); ++it) {
    a = 1.0 / (prototypes * at::mv(e, b));
    b = 1.0 / (btot * at::mv(e.t(), a));
  }
  at::Tensor p = a.unsqueeze(1) * e;
  p = p / p.sum(0, /*keepdim=*/true);
  const int64_t samples = in[0][0].size(0);
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r)
    out.push_back({p.slice(1, r * samples, (r + 1) * samples).t().to(at::kFloat).contiguous()});
  return out;
}

// Every sample is a masked patch: n_masked_patches = B, as PKB.
Tensors prepare(const OracleContext&, int, Tensors raw) {
  raw[1].fill_(raw[0].size(0));
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("dinov2_distributed_sinkhorn_knopp", reference, oracle, prepare);

}  // namespace problem_080
