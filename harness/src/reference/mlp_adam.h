// One Adam step of a 2-layer MLP's MSE loss, as problems 40-42 take it (ddp, zero1_optimizer_shard,
// zero2_optimizer_shard_grad): the model's per-rank gradients and the Adam update in the run dtype for the
// references, the full-batch fp64 gradients and the element-wise fp64 Adam step for the oracles, once. ZeRO-1 and
// ZeRO-2 (41, 42) share their whole step and oracle and differ only in how a rank gets its partition of the
// averaged gradient, which each passes in.
//
// Inputs: 0 X (rows, in), 1 y, 2-5 the parameters W1, b1, W2, b2; then the Adam moments m and v (40: four each,
// per parameter; 41-42: this rank's partition of the flattened parameters, one each).
#pragma once

#include <cmath>
#include <vector>

#include "reference/reference.h"

namespace pkb::mlp_adam {

constexpr double kLr = 1e-3, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

// ---- the references' side: ATen ops in the run dtype ----

inline at::Tensor flatten(const Tensors& ts) {
  std::vector<at::Tensor> parts;
  for (const auto& t : ts) parts.push_back(t.reshape({-1}));
  return at::cat(parts);
}

inline Tensors unflatten(const at::Tensor& flat, const Tensors& like) {
  std::vector<int64_t> sizes;
  for (const auto& t : like) sizes.push_back(t.numel());
  Tensors out;
  auto parts = at::split_with_sizes(flat, sizes);
  for (size_t i = 0; i < like.size(); ++i) out.push_back(parts[i].view(like[i].sizes()));
  return out;
}

// Gradients [gW1, gb1, gW2, gb2] of mean((relu(X W1^T + b1) W2^T + b2 - y)^2), op by op as autograd rounds them.
inline Tensors local_grads(const at::Tensor& X, const at::Tensor& y, const Tensors& p) {
  at::Tensor h = at::relu(at::linear(X, p[0], p[1]));
  at::Tensor diff = at::linear(h, p[2], p[3]) - y;
  at::Tensor dout = diff * (2.0 / static_cast<double>(diff.numel()));
  at::Tensor dh = dout.mm(p[2]).masked_fill(h <= 0, 0);
  return {dh.t().mm(X), dh.sum(0), dout.t().mm(h), dout.sum(0)};
}

struct AdamStep {
  at::Tensor m, v, update;  // the new moments and the parameters' change
};

// torch.optim.Adam's step `step` on gradient g, op by op as it rounds them.
inline AdamStep adam_step(const at::Tensor& m0, const at::Tensor& v0, const at::Tensor& g, int64_t step) {
  at::Tensor m = m0.mul(kBeta1).add(g, 1 - kBeta1);
  at::Tensor v = v0.mul(kBeta2).addcmul(g, g, 1 - kBeta2);
  at::Tensor denom = (v / (1 - std::pow(kBeta2, step))).sqrt() + kEps;
  at::Tensor update = (m / (1 - std::pow(kBeta1, step))) / denom * (-kLr);
  return {m, v, update};
}

// This rank's partition (`part` elements) of the gradient averaged over the ranks, from its local flat gradient g.
using GradientPartition = at::Tensor (*)(const RankContext& ctx, at::Tensor g, int64_t part);

// ZeRO-1/2: parameters broadcast from rank 0, local gradients, this rank's averaged partition, Adam on the
// partition's moments (inputs 6, 7), the new parameters all-gathered. Outputs: W1, b1, W2, b2, m, v, update.
inline Tensors zero_reference(const RankContext& ctx, const Tensors& in, GradientPartition gradient_partition) {
  const int64_t step = ctx.scalar("step");
  Tensors shapes(in.begin() + 2, in.begin() + 6);
  at::Tensor p = flatten(shapes);
  ctx.comm->broadcast(p, 0);
  at::Tensor g = flatten(local_grads(in[0], in[1], unflatten(p, shapes)));
  const int64_t part = p.numel() / ctx.world;
  at::Tensor g_part = gradient_partition(ctx, g, part);
  auto [m, v, update] = adam_step(in[6], in[7], g_part, step);
  at::Tensor new_part = p.narrow(0, ctx.rank * part, part) + update;
  ctx.comm->all_gather(new_part.contiguous(), p);
  Tensors out = unflatten(p, shapes);
  out.insert(out.end(), {m, v, update});
  return out;
}

// ---- the oracles' side: fp64 ----

// The full-batch gradients [gW1, gb1, gW2, gb2] in double: the average of the ranks' equal-size per-rank means is
// the mean over all rows, so every rank's rows are concatenated; the parameters are rank 0's.
inline Tensors full_batch_grads64(const std::vector<Tensors>& in) {
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  std::vector<at::Tensor> xs, ys;
  for (const auto& r : in) {
    xs.push_back(d(r[0]));
    ys.push_back(d(r[1]));
  }
  at::Tensor X = at::cat(xs), Y = at::cat(ys);
  at::Tensor W1 = d(in[0][2]), b1 = d(in[0][3]), W2 = d(in[0][4]), b2 = d(in[0][5]);
  at::Tensor pre = X.mm(W1.t()) + b1, h = pre.clamp_min(0);
  at::Tensor r = (h.mm(W2.t()) + b2 - Y) * (2.0 / static_cast<double>(Y.numel()));  // d loss / d out
  at::Tensor dpre = r.mm(W2) * (pre > 0).to(at::kDouble);
  return {dpre.t().mm(X), dpre.sum(0), r.t().mm(h), r.sum(0)};
}

// Adam on one element in double, with the bias corrections bc1 = 1 - beta1^step, bc2 = 1 - beta2^step: updates the
// moments m and v in place and returns the parameter's change.
inline double adam_update64(double g, double& m, double& v, double bc1, double bc2) {
  m = kBeta1 * m + (1 - kBeta1) * g;
  v = kBeta2 * v + (1 - kBeta2) * g * g;
  return -kLr * (m / bc1) / (std::sqrt(v / bc2) + kEps);
}

// ZeRO-1/2: the full-batch gradient, then Adam element by element over each rank's partition.
inline std::vector<Tensors> zero_oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t step = ctx.scalar("step");
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  Tensors grads = full_batch_grads64(in);
  at::Tensor W1 = d(in[0][2]), b1 = d(in[0][3]), W2 = d(in[0][4]), b2 = d(in[0][5]);
  at::Tensor g = at::cat({grads[0].view(-1), grads[1], grads[2].view(-1), grads[3]});
  at::Tensor p = at::cat({W1.view(-1), b1, W2.view(-1), b2});

  const double bc1 = 1 - std::pow(kBeta1, step), bc2 = 1 - std::pow(kBeta2, step);
  const int64_t part = p.numel() / W;
  at::Tensor p_new = p.clone();
  std::vector<Tensors> state;
  for (int q = 0; q < W; ++q) {
    at::Tensor m = d(in[q][6]).contiguous(), v = d(in[q][7]).contiguous(), u = at::empty({part}, at::kDouble);
    double *mp = m.data_ptr<double>(), *vp = v.data_ptr<double>(), *up = u.data_ptr<double>();
    const double* gp = g.data_ptr<double>() + q * part;
    double* pp = p_new.data_ptr<double>() + q * part;
    for (int64_t i = 0; i < part; ++i) {
      up[i] = adam_update64(gp[i], mp[i], vp[i], bc1, bc2);
      pp[i] += up[i];
    }
    state.push_back({m, v, u});
  }
  std::vector<int64_t> sizes = {W1.numel(), b1.numel(), W2.numel(), b2.numel()};
  auto parts = at::split_with_sizes(p_new, sizes);
  std::vector<Tensors> out;
  for (int q = 0; q < W; ++q) {
    Tensors o;
    for (int k = 0; k < 4; ++k) o.push_back(parts[k].view(in[0][2 + k].sizes()));
    o.insert(o.end(), state[q].begin(), state[q].end());
    out.push_back(o);
  }
  return out;
}

}  // namespace pkb::mlp_adam
