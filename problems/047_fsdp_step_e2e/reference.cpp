#include "reference/reference.h"

#include <cmath>

namespace problem_047 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// PKB's optimizer constants (solution()'s defaulted float parameters).
constexpr double kLr = 1e-3, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8, kWd = 0.01;

struct Mlp {
  at::Tensor w1, b1, w2, b2;
};

Mlp unflatten(const at::Tensor& flat, int64_t hidden, int64_t d_in, int64_t d_out) {
  auto parts = flat.split_with_sizes({hidden * d_in, hidden, d_out * hidden, d_out});
  return {parts[0].view({hidden, d_in}), parts[1], parts[2].view({d_out, hidden}), parts[3]};
}

// Forward and backward of mean((relu(X W1^T + b1) W2^T + b2 - y)^2) in the input dtype, op by op as autograd
// rounds; the gradients flattened in parameter order.
at::Tensor local_gradient(const Mlp& p, const at::Tensor& x, const at::Tensor& y) {
  at::Tensor h = at::relu(at::linear(x, p.w1, p.b1));
  at::Tensor out = at::linear(h, p.w2, p.b2);
  at::Tensor dout = (out - y) * (2.0 / static_cast<double>(out.numel()));
  at::Tensor gw2 = at::matmul(dout.t(), h), gb2 = dout.sum(0);
  at::Tensor dpre = at::matmul(dout, p.w2) * (h > 0).to(h.scalar_type());
  at::Tensor gw1 = at::matmul(dpre.t(), x), gb1 = dpre.sum(0);
  return at::cat({gw1.reshape(-1), gb1, gw2.reshape(-1), gb2});
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &x = in[0], &y = in[1], &theta0 = in[2], &m0 = in[3], &v0 = in[4];
  int64_t hidden = ctx.scalar("hidden"), d_in = ctx.scalar("d_in"), d_out = ctx.scalar("d_out");
  int64_t step = ctx.scalar("step");
  at::Tensor flat = at::empty({theta0.numel() * ctx.world}, theta0.options());
  ctx.comm->all_gather(theta0.contiguous(), flat);
  at::Tensor grad = local_gradient(unflatten(flat, hidden, d_in, d_out), x, y);
  at::Tensor g = at::empty_like(theta0);
  ctx.comm->reduce_scatter(grad.contiguous(), g, ReduceOp::sum);
  g = g / static_cast<double>(ctx.world);

  double bc1 = 1 - std::pow(kBeta1, step), bc2 = 1 - std::pow(kBeta2, step);
  at::Tensor m = at::add(m0 * kBeta1, g, 1 - kBeta1);         // fused alpha: one rounding
  at::Tensor v = at::addcmul(v0 * kBeta2, g, g, 1 - kBeta2);  // fused value: one rounding
  at::Tensor u = (m / bc1) / (at::sqrt(v / bc2) + kEps);
  at::Tensor theta = at::add(theta0, u, -kLr);
  theta = at::add(theta, theta0, -kLr * kWd);  // decay on the pre-update shard
  at::Tensor update = (u.to(at::kFloat) * -kLr - theta0.to(at::kFloat) * (kLr * kWd)).to(theta0.scalar_type());
  return {theta, m, v, update};
}

// fp64 throughout: the full-batch gradient of the mean loss over all ranks' rows (the chunks are equal, so it is the
// mean of the per-rank gradients), then Adam on each rank's slice of it.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  int64_t hidden = ctx.scalar("hidden"), d_in = ctx.scalar("d_in"), d_out = ctx.scalar("d_out");
  int64_t step = ctx.scalar("step");
  std::vector<at::Tensor> xs, ys, shards;
  for (const auto& r : in) {
    xs.push_back(r[0].to(at::kDouble));
    ys.push_back(r[1].to(at::kDouble));
    shards.push_back(r[2].to(at::kDouble));
  }
  at::Tensor x = at::cat(xs), y = at::cat(ys), flat = at::cat(shards);
  Mlp p = unflatten(flat, hidden, d_in, d_out);
  at::Tensor pre = at::addmm(p.b1, x, p.w1.t());
  at::Tensor h = pre.clamp_min(0);
  at::Tensor out = at::addmm(p.b2, h, p.w2.t());
  at::Tensor dout = 2 * (out - y) / static_cast<double>(out.numel());
  at::Tensor dpre = at::mm(dout, p.w2).masked_fill(pre <= 0, 0.0);
  at::Tensor grad =
      at::cat({at::mm(dpre.t(), x).reshape(-1), dpre.sum(0), at::mm(dout.t(), h).reshape(-1), dout.sum(0)});

  double bc1 = 1 - std::pow(kBeta1, step), bc2 = 1 - std::pow(kBeta2, step);
  int64_t shard = in[0][2].numel();
  std::vector<Tensors> result;
  for (int r = 0; r < ctx.world; ++r) {
    at::Tensor g = grad.slice(0, r * shard, (r + 1) * shard), theta0 = shards[r];
    at::Tensor m = kBeta1 * in[r][3].to(at::kDouble) + (1 - kBeta1) * g;
    at::Tensor v = kBeta2 * in[r][4].to(at::kDouble) + (1 - kBeta2) * g * g;
    at::Tensor update = -kLr * ((m / bc1) / (at::sqrt(v / bc2) + kEps) + kWd * theta0);
    result.push_back({theta0 + update, m, v, update});
  }
  return result;
}

PKB_REGISTER_PROBLEM("fsdp_step_e2e", reference, oracle);

}  // namespace problem_047
