#include "reference/reference.h"

#include <array>
#include <cmath>

namespace problem_086 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

constexpr std::array<std::array<double, 3>, 5> kQuintic = {{{4.0848, -6.8946, 2.9270},
                                                            {3.9505, -6.3029, 2.6377},
                                                            {3.7418, -5.5913, 2.3037},
                                                            {2.8769, -3.1427, 1.2046},
                                                            {2.8366, -3.0525, 1.2012}}};

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor x = in[0].to(at::kFloat);
  at::Tensor norm_sq = (x * x).sum();
  ctx.comm->all_reduce(norm_sq);
  x = x / norm_sq.sqrt().clamp_min(1e-7);
  for (int64_t s = 0; s < ctx.scalar("steps"); ++s) {
    const auto& [a, b, c] = kQuintic[s];
    at::Tensor gram = at::mm(x, x.t()).contiguous();
    ctx.comm->all_reduce(gram);
    x = a * x + at::mm(b * gram + c * at::mm(gram, gram), x);
  }
  return {x.to(in[0].scalar_type())};
}

// fp64 on the global X (the ranks' blocks side by side): the same iteration, one Gram matrix of the whole matrix.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> blocks;
  for (const auto& r : in) blocks.push_back(r[0].to(at::kDouble));
  at::Tensor x = at::cat(blocks, 1);
  x = x / std::max(x.norm().item<double>(), 1e-7);
  for (int64_t s = 0; s < ctx.scalar("steps"); ++s) {
    const auto& [a, b, c] = kQuintic[s];
    at::Tensor gram = at::mm(x, x.t());
    x = a * x + at::mm(b * gram + c * at::mm(gram, gram), x);
  }
  const int64_t cols = in[0][0].size(1);
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) out.push_back({x.slice(1, r * cols, (r + 1) * cols).to(at::kFloat)});
  return out;
}

// bf16(z + 0.01 r) in the dtype, z the rank's N(0, 1) draw.
Tensors prepare(const OracleContext&, int rank, Tensors raw) {
  raw[0] = raw[0] + 0.01 * rank;
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("tp_muon_orthogonalization", reference, oracle, prepare);

}  // namespace problem_086
