#include <cmath>

#include "reference/reference.h"

namespace {

using namespace pkb;

constexpr double kLr = 1e-3, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

at::Tensor flatten(const Tensors& ts) {
  std::vector<at::Tensor> parts;
  for (const auto& t : ts) parts.push_back(t.reshape({-1}));
  return at::cat(parts);
}

Tensors unflatten(const at::Tensor& flat, const Tensors& like) {
  std::vector<int64_t> sizes;
  for (const auto& t : like) sizes.push_back(t.numel());
  Tensors out;
  auto parts = at::split_with_sizes(flat, sizes);
  for (size_t i = 0; i < like.size(); ++i) out.push_back(parts[i].view(like[i].sizes()));
  return out;
}

// Gradients [gW1, gb1, gW2, gb2] of mean((relu(X W1^T + b1) W2^T + b2 - y)^2), op by op as autograd rounds them.
Tensors local_grads(const at::Tensor& X, const at::Tensor& y, const Tensors& p) {
  at::Tensor h = at::relu(at::linear(X, p[0], p[1]));
  at::Tensor diff = at::linear(h, p[2], p[3]) - y;
  at::Tensor dout = diff * (2.0 / static_cast<double>(diff.numel()));
  at::Tensor dh = dout.mm(p[2]).masked_fill(h <= 0, 0);
  return {dh.t().mm(X), dh.sum(0), dout.t().mm(h), dout.sum(0)};
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int64_t step = ctx.scalar("step");
  Tensors shapes(in.begin() + 2, in.begin() + 6);
  at::Tensor p = flatten(shapes);
  ctx.comm->broadcast(p, 0);
  at::Tensor g = flatten(local_grads(in[0], in[1], unflatten(p, shapes)));
  const int64_t part = p.numel() / ctx.world;
  at::Tensor g_part = at::empty({part}, g.options());
  ctx.comm->reduce_scatter(g, g_part, ReduceOp::sum);  // only this rank's partition of the gradient
  g_part = g_part / ctx.world;
  at::Tensor m = in[6].mul(kBeta1).add(g_part, 1 - kBeta1);
  at::Tensor v = in[7].mul(kBeta2).addcmul(g_part, g_part, 1 - kBeta2);
  at::Tensor denom = (v / (1 - std::pow(kBeta2, step))).sqrt() + kEps;
  at::Tensor update = (m / (1 - std::pow(kBeta1, step))) / denom * (-kLr);
  at::Tensor new_part = p.narrow(0, ctx.rank * part, part) + update;
  ctx.comm->all_gather(new_part.contiguous(), p);
  Tensors out = unflatten(p, shapes);
  out.insert(out.end(), {m, v, update});
  return out;
}

// ---- oracle: one full-batch gradient in double (the average of equal-size per-rank means is the mean over all
// rows), then Adam element by element over each rank's partition ----

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t step = ctx.scalar("step");
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
  at::Tensor g = at::cat({dpre.t().mm(X).view(-1), dpre.sum(0), r.t().mm(h).view(-1), r.sum(0)});
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
      mp[i] = kBeta1 * mp[i] + (1 - kBeta1) * gp[i];
      vp[i] = kBeta2 * vp[i] + (1 - kBeta2) * gp[i] * gp[i];
      up[i] = -kLr * (mp[i] / bc1) / (std::sqrt(vp[i] / bc2) + kEps);
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

}  // namespace

PKB_REGISTER_PROBLEM("zero2_optimizer_shard_grad", reference, oracle);
