#include <cmath>

#include "reference/mlp_adam.h"

// One DDP step: parameters and Adam moments broadcast from rank 0, local gradients all-reduced and averaged, Adam
// on every parameter. The model, its gradients and the Adam step are shared with problems 41 and 42
// (harness/src/reference/mlp_adam.h).
namespace problem_040 {  // named, not anonymous: the references build as unity batches

using namespace pkb;
using namespace pkb::mlp_adam;

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
  AdamStep s = adam_step(m, v, g, step);
  Tensors out = unflatten(p + s.update, shapes);
  for (const auto& t : unflatten(s.m, shapes)) out.push_back(t);
  for (const auto& t : unflatten(s.v, shapes)) out.push_back(t);
  out.push_back(s.update);
  return out;
}

// ---- oracle: one full-batch gradient in double (the DDP average of equal-size per-rank means is the mean over
// all rows), then Adam element by element ----

std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int64_t step = ctx.scalar("step");
  auto d = [](const at::Tensor& t) { return t.to(at::kDouble); };
  Tensors g = full_batch_grads64(in);

  const double bc1 = 1 - std::pow(kBeta1, step), bc2 = 1 - std::pow(kBeta2, step);
  Tensors params, ms, vs, updates;
  for (int k = 0; k < 4; ++k) {
    at::Tensor gk = g[k].contiguous().view(-1), p = d(in[0][2 + k]).contiguous().view(-1);
    at::Tensor m = d(in[0][6 + k]).contiguous().view(-1), v = d(in[0][10 + k]).contiguous().view(-1);
    at::Tensor u = at::empty_like(gk);
    double *gp = gk.data_ptr<double>(), *mp = m.data_ptr<double>(), *vp = v.data_ptr<double>(),
           *up = u.data_ptr<double>();
    for (int64_t i = 0; i < gk.numel(); ++i) up[i] = adam_update64(gp[i], mp[i], vp[i], bc1, bc2);
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

PKB_REGISTER_PROBLEM("ddp", reference, oracle);

}  // namespace problem_040
