#include "reference/reference.h"

#include <cmath>

namespace problem_057 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// softmax_scale None: head_dim^-1/2 (0.125 at PKB's D = 64; the small CI shapes use another D).
double softmax_scale(const at::Tensor& t) { return 1.0 / std::sqrt(static_cast<double>(t.size(-1))); }

at::Tensor heads_first(const at::Tensor& t) { return t.permute({0, 2, 1, 3}); }  // (B, S, H, D) -> (B, H, S, D)
at::Tensor seq_first(const at::Tensor& t) { return t.permute({0, 2, 1, 3}); }    // (B, H, S, D) -> (B, S, H, D)

// Inputs: 0 dout, 1 q, 2 k, 3 v, 4 out, 5 softmax_lse (B, H, S) fp32.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  Communicator &cp = ctx.group("cp"), &dp = ctx.group("dp");
  int c = cp.rank(), size = cp.size();
  at::Tensor dout = heads_first(in[0].to(at::kFloat)), q = heads_first(in[1].to(at::kFloat));
  at::Tensor lse = in[5].unsqueeze(-1);                                                    // (B, H, S, 1)
  at::Tensor dvec = (dout * heads_first(in[4].to(at::kFloat))).sum(-1, /*keepdim=*/true);  // uses the given out
  std::vector<int64_t> shape = in[2].sizes().vec();
  shape.insert(shape.begin(), size);
  at::Tensor k_all = at::empty(shape, in[2].options()), v_all = at::empty(shape, in[3].options());
  cp.all_gather(in[2].contiguous(), k_all);  // what the ring delivers, gathered at once
  cp.all_gather(in[3].contiguous(), v_all);

  // dQ accumulates over j = c, c-1, ..., c+1 (mod C); the dK/dV partials of every block go to their owners.
  at::Tensor dq = at::zeros(q.sizes(), q.options()),
             dk_parts = at::empty({size, q.size(0), q.size(1), q.size(2), q.size(3)}, q.options());
  at::Tensor dv_parts = at::empty_like(dk_parts);
  for (int step = 0; step < size; ++step) {
    int j = ((c - step) % size + size) % size;
    at::Tensor k = heads_first(k_all[j].to(at::kFloat)), v = heads_first(v_all[j].to(at::kFloat));
    at::Tensor p =
        at::exp(at::matmul(q, k.transpose(-1, -2)) * softmax_scale(q) - lse);  // local lse: rows may sum past 1
    at::Tensor ds = p * (at::matmul(dout, v.transpose(-1, -2)) - dvec);
    dq = dq + at::matmul(ds, k) * softmax_scale(q);
    dk_parts[j] = at::matmul(ds.transpose(-1, -2), q) * softmax_scale(q);
    dv_parts[j] = at::matmul(p.transpose(-1, -2), dout);
  }
  at::Tensor dk = at::empty(q.sizes(), q.options()), dv = at::empty(q.sizes(), q.options());
  cp.reduce_scatter(dk_parts, dk, ReduceOp::sum);  // fp32, as the ring's dK/dV accumulators
  cp.reduce_scatter(dv_parts, dv, ReduceOp::sum);

  Tensors result;
  for (const at::Tensor& g : {dq, dk, dv}) {
    at::Tensor t = seq_first(g).to(in[1].scalar_type()).contiguous();
    dp.all_reduce(t, ReduceOp::sum);  // in the dtype, then divided (rounded again)
    result.push_back(t / static_cast<double>(dp.size()));
  }
  return result;
}

// fp64 over each CP group's whole sequence: one (C S x C S) probability matrix with every query row's own local lse,
// the three gradients as dense products, sliced to the ranks and averaged over the DP pair.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<Tensors> grads(ctx.world);
  for (int r = 0; r < ctx.world; ++r) {
    const std::vector<int>& ring = ctx.group_of("cp", r);
    if (ring[0] != r) continue;  // once per CP group
    auto cat = [&](int i, int dim) {
      std::vector<at::Tensor> parts;
      for (int m : ring) parts.push_back(in[m][i].to(at::kDouble));
      return at::cat(parts, dim);
    };
    at::Tensor dout = heads_first(cat(0, 1)), q = heads_first(cat(1, 1)), k = heads_first(cat(2, 1));
    at::Tensor v = heads_first(cat(3, 1)), out = heads_first(cat(4, 1)), lse = cat(5, 2).unsqueeze(-1);
    at::Tensor p = at::exp(at::matmul(q, k.transpose(-1, -2)) * softmax_scale(q) - lse);
    at::Tensor ds = p * (at::matmul(dout, v.transpose(-1, -2)) - (dout * out).sum(-1, true));
    at::Tensor dq = seq_first(at::matmul(ds, k) * softmax_scale(q)),
               dk = seq_first(at::matmul(ds.transpose(-1, -2), q) * softmax_scale(q));
    at::Tensor dv = seq_first(at::matmul(p.transpose(-1, -2), dout));
    int64_t s = in[r][1].size(1);
    for (size_t i = 0; i < ring.size(); ++i) {
      auto cut = [&](const at::Tensor& g) { return g.slice(1, i * s, (i + 1) * s); };
      grads[ring[i]] = {cut(dq), cut(dk), cut(dv)};
    }
  }
  std::vector<Tensors> result(ctx.world);
  for (int r = 0; r < ctx.world; ++r) {
    const std::vector<int>& pair = ctx.group_of("dp", r);
    for (int i = 0; i < 3; ++i) {
      at::Tensor sum = at::zeros_like(grads[r][i]);
      for (int m : pair) sum += grads[m][i];
      result[r].push_back(sum / static_cast<double>(pair.size()));
    }
  }
  return result;
}

// out and softmax_lse as PKB precomputes them: from the rank's LOCAL q, k, v only, without causality, in fp32.
Tensors prepare(const OracleContext&, int, Tensors raw) {
  at::Tensor q = heads_first(raw[1].to(at::kFloat)), k = heads_first(raw[2].to(at::kFloat));
  at::Tensor s = at::matmul(q, k.transpose(-1, -2)) * softmax_scale(q);
  at::Tensor lse = at::logsumexp(s, -1);  // (B, H, S)
  at::Tensor out = at::matmul(at::exp(s - lse.unsqueeze(-1)), heads_first(raw[3].to(at::kFloat)));
  raw[4] = seq_first(out).to(raw[4].scalar_type()).contiguous();
  raw[5] = lse.contiguous();
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("ring_attention_backward_dp", reference, oracle, prepare);

}  // namespace problem_057
