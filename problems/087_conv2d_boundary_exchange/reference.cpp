#include "reference/reference.h"

namespace problem_087 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// conv2d with fp32 accumulation and one rounding: the dtype's own kernel on GPUs (cuDNN), fp32 then rounded on CPUs.
at::Tensor conv(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, int64_t stride, int64_t pad_w) {
  const std::vector<int64_t> strides = {stride, stride}, pads = {0, pad_w};
  if (x.is_cuda()) return at::conv2d(x, w, b, strides, pads);
  return at::conv2d(x.to(at::kFloat), w.to(at::kFloat), b.to(at::kFloat), strides, pads).to(x.scalar_type());
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &x = in[0], &weight = in[1], &bias = in[2];
  const int64_t p = ctx.scalar("padding"), h = x.size(2);
  at::Tensor edges = at::stack({x.slice(2, 0, p), x.slice(2, h - p, h)}).contiguous();  // (2, 1, C, p, WD)
  std::vector<int64_t> shape = edges.sizes().vec();
  shape.insert(shape.begin(), ctx.world);
  at::Tensor gathered = at::empty(shape, edges.options());
  ctx.comm->all_gather(edges, gathered);
  at::Tensor top = ctx.rank > 0 ? gathered[ctx.rank - 1][1] : at::zeros_like(edges[0]);
  at::Tensor bottom = ctx.rank < ctx.world - 1 ? gathered[ctx.rank + 1][0] : at::zeros_like(edges[0]);
  return {conv(at::cat({top, x, bottom}, 2), weight, bias, ctx.scalar("stride"), p)};
}

// fp64: the whole image (bands stacked), zero-padded by 1 all round; rank r's output rows come from padded rows
// [r H, r H + H + 2), convolved with rank r's weight and bias.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<at::Tensor> bands;
  for (const auto& r : in) bands.push_back(r[0].to(at::kDouble));
  at::Tensor image = at::constant_pad_nd(at::cat(bands, 2), {1, 1, 1, 1});
  const int64_t h = in[0][0].size(2);
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r) {
    at::Tensor rows = image.slice(2, r * h, r * h + h + 2);
    out.push_back({at::conv2d(rows, in[r][1].to(at::kDouble), in[r][2].to(at::kDouble)).to(at::kFloat)});
  }
  return out;
}

PKB_REGISTER_PROBLEM("conv2d_boundary_exchange", reference, oracle);

}  // namespace problem_087
