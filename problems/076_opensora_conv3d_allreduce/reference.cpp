#include "reference/reference.h"

#include <cmath>

namespace problem_076 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor partial = at::conv3d(in[0].to(at::kFloat), in[1].to(at::kFloat)).contiguous();
  ctx.comm->all_reduce(partial);
  return {(partial + in[2].to(at::kFloat).view({1, -1, 1, 1, 1})).to(in[0].scalar_type())};
}

// fp64: one convolution over all input channels (the ranks' slices concatenated in rank order, as are the weights'
// input channels), plus the bias.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> x, w;
  for (const auto& r : in) {
    x.push_back(r[0].to(at::kDouble));
    w.push_back(r[1].to(at::kDouble));
  }
  at::Tensor out = at::conv3d(at::cat(x, 1), at::cat(w, 1), in[0][2].to(at::kDouble));
  return std::vector<Tensors>(ctx.world, Tensors{out.to(in[0][0].scalar_type())});
}

// Weight N(0, 1 / fan_in) with the global fan-in 27 W Cin_loc (outputs of std ~ 1); bias linspace(-0.1, 0.1), as PKB.
Tensors prepare(const OracleContext& ctx, int, Tensors raw) {
  const double fan_in = 27.0 * ctx.world * raw[1].size(1);
  raw[1] = (raw[1].to(at::kFloat) / std::sqrt(fan_in)).to(raw[1].scalar_type());
  raw[2] = at::linspace(-0.1, 0.1, raw[2].size(0), at::kFloat).to(raw[2].scalar_type());
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("opensora_conv3d_allreduce", reference, oracle, prepare);

}  // namespace problem_076
