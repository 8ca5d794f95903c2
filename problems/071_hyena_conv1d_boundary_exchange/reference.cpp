#include "reference/reference.h"

namespace problem_071 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// Every rank's two tails (first-half, second-half), gathered at once: (W, 2, B, C, K-1). The reference then takes
// the halos the point-to-point exchange would deliver.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &x = in[0], &weight = in[1];
  const int64_t L = x.size(2) / 2, halo = weight.size(2) - 1;
  const int W = ctx.world, r = ctx.rank;
  at::Tensor tails = at::stack({x.slice(2, L - halo, L), x.slice(2, 2 * L - halo, 2 * L)}).contiguous();
  at::Tensor all = at::empty({W, 2, x.size(0), x.size(1), halo}, x.options());
  ctx.comm->all_gather(tails, all);
  at::Tensor halo_first = r == 0 ? at::zeros_like(all[0][0]) : all[r - 1][0];
  at::Tensor halo_second = r == W - 1 ? all[r][0] : all[r + 1][1];
  at::Tensor padded =
      at::cat({at::cat({halo_first, x.slice(2, 0, L)}, 2), at::cat({halo_second, x.slice(2, L, 2 * L)}, 2)});
  // fp32 accumulation, one rounding (PyTorch's bf16 conv on the GPU).
  at::Tensor y = at::conv1d(padded.to(at::kFloat), weight.to(at::kFloat), at::Tensor(), at::IntArrayRef{1},
                            at::IntArrayRef{0}, at::IntArrayRef{1}, x.size(1))
                     .to(x.scalar_type());
  return {at::cat({y.slice(0, 0, x.size(0)), y.slice(0, x.size(0), 2 * x.size(0))}, 2)};
}

// fp64: the global sequence assembled from every rank's two chunks, then y[g] = sum_j w_r[c, j] X[g - K + 1 + j] by
// direct summation at each rank's positions with that rank's weight.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t L = in[0][0].size(2) / 2, K = in[0][1].size(2);
  std::vector<at::Tensor> chunks(2 * W);
  for (int r = 0; r < W; ++r) {
    chunks[r] = in[r][0].slice(2, 0, L).to(at::kDouble);
    chunks[2 * W - 1 - r] = in[r][0].slice(2, L, 2 * L).to(at::kDouble);
  }
  at::Tensor X = at::cat(chunks, 2);  // (B, C, 2 W L)
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor w = in[r][1].to(at::kDouble).squeeze(1);  // (C, K)
    at::Tensor y = at::zeros_like(in[r][0], at::kDouble);
    const int64_t starts[2] = {r * L, (2 * W - 1 - r) * L};
    for (int half = 0; half < 2; ++half)
      for (int64_t j = 0; j < K; ++j) {
        // output position g = start + t reads X[g - K + 1 + j]; positions before 0 contribute nothing
        const int64_t shift = K - 1 - j;
        const int64_t t0 = std::max<int64_t>(0, shift - starts[half]);
        if (t0 >= L) continue;
        at::Tensor src = X.slice(2, starts[half] + t0 - shift, starts[half] + L - shift);
        y.slice(2, half * L + t0, half * L + L) += w.select(1, j).view({1, -1, 1}) * src;
      }
    out.push_back({y.to(in[r][0].scalar_type())});
  }
  return out;
}

PKB_REGISTER_PROBLEM("hyena_conv1d_boundary_exchange", reference, oracle);

}  // namespace problem_071
