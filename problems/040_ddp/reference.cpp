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
  at::Tensor p = flatten(shapes), m = flatten(Tensors(in.begin() + 6, in.begin() + 10)),
             v = flatten(Tensors(in.begin() + 10, in.begin() + 14));
  ctx.comm->broadcast(p, 0);
  ctx.comm->broadcast(m, 0);
  ctx.comm->broadcast(v, 0);
  at::Tensor g = flatten(local_grads(in[0], in[1], unflatten(p, shapes)));
  ctx.comm->all_reduce(g, ReduceOp::sum);
  g = g / ctx.world;
  m = m.mul(kBeta1).add(g, 1 - kBeta1);
  v = v.mul(kBeta2).addcmul(g, g, 1 - kBeta2);
  at::Tensor denom = (v / (1 - std::pow(kBeta2, step))).sqrt() + kEps;
  at::Tensor update = (m / (1 - std::pow(kBeta1, step))) / denom * (-kLr);
  Tensors out = unflatten(p + update, shapes);
  for (const auto& t : unflatten(m, shapes)) out.push_back(t);
  for (const auto& t : unflatten(v, shapes)) out.push_back(t);
  out.push_back(update);
  return out;
}

// ---- oracle: one full-batch gradient in double (the DDP average of equal-size per-rank means is the mean over
// all rows), then Adam element by element ----

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
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
  std::vector<at::Tensor> g = {dpre.t().mm(X), dpre.sum(0), r.t().mm(h), r.sum(0)};

  const double bc1 = 1 - std::pow(kBeta1, step), bc2 = 1 - std::pow(kBeta2, step);
  Tensors params, ms, vs, updates;
  for (int k = 0; k < 4; ++k) {
    at::Tensor gk = g[k].contiguous().view(-1), p = d(in[0][2 + k]).contiguous().view(-1);
    at::Tensor m = d(in[0][6 + k]).contiguous().view(-1), v = d(in[0][10 + k]).contiguous().view(-1);
    at::Tensor u = at::empty_like(gk);
    double *gp = gk.data_ptr<double>(), *mp = m.data_ptr<double>(), *vp = v.data_ptr<double>(), *up = u.data_ptr<double>();
    for (int64_t i = 0; i < gk.numel(); ++i) {
      mp[i] = kBeta1 * mp[i] + (1 - kBeta1) * gp[i];
      vp[i] = kBeta2 * vp[i] + (1 - kBeta2) * gp[i] * gp[i];
      up[i] = -kLr * (mp[i] / bc1) / (std::sqrt(vp[i] / bc2) + kEps);
    }
    params.push_back((p + u).view(in[0][2 + k].sizes()));
    ms.push_back(m.view(in[0][2 + k].sizes()));
    vs.push_back(v.view(in[0][2 + k].sizes()));
    updates.push_back(u);
  }
  Tensors out = params;
  out.insert(out.end(), ms.begin(), ms.end());
  out.insert(out.end(), vs.begin(), vs.end());
  out.push_back(at::cat(updates));
  return std::vector<Tensors>(ctx.world, out);
}

}  // namespace

PKB_REGISTER_PROBLEM("ddp", reference, oracle);
