#include "reference/reference.h"

#include <limits>

namespace problem_025 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// a @ b^T with fp32 accumulation. On CPUs an fp32 product goes through oneDNN's 1x1 convolution: Debian's libtorch
// multiplies fp32 through netlib BLAS, ~20 s for 1024 x 1024 x 32000 against under 1 s this way.
at::Tensor matmul_nt(const at::Tensor& a, const at::Tensor& b) {
  if (a.is_cuda() || a.scalar_type() != at::kFloat || !at::hasMKLDNN()) return at::matmul(a, b.t());
  at::Tensor image = a.t().contiguous().view({1, a.size(1), 1, a.size(0)});  // channels = inner dim
  at::Tensor filters = b.contiguous().view({b.size(0), b.size(1), 1, 1});
  at::Tensor out = at::mkldnn_convolution(image, filters, {}, {0, 0}, {1, 1}, {1, 1}, 1);
  return out.view({b.size(0), a.size(0)}).t();
}

// Sum in fp32, rounded once to the tensor's dtype (PyTorch's reduction semantics on the GPU).
at::Tensor sum_rounded(const at::Tensor& t) { return t.to(at::kFloat).sum().to(t.scalar_type()); }

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &hidden = in[0], &weight = in[1], &labels = in[2], &old_lp = in[3], &adv = in[4];
  const auto dtype = hidden.scalar_type();
  at::Tensor invalid = labels.eq(ctx.scalar("ignore_index"));

  // Logits rounded to the run dtype; the cross-entropy op reference.py calls (log-softmax in fp32, the label's value
  // rounded once; 0 for ignored labels), so both references share its kernels and round alike.
  at::Tensor logits = matmul_nt(hidden, weight).to(dtype);
  at::Tensor ce = at::cross_entropy_loss(logits, labels, {}, at::Reduction::None, ctx.scalar("ignore_index"));
  at::Tensor new_lp = -ce;

  at::Tensor count = (~invalid).sum().to(at::kFloat);
  ctx.comm->all_reduce(count);
  count = count.clamp_min(1);

  at::Tensor delta = (new_lp - old_lp).clamp(-20, 20).masked_fill(invalid, 0);
  at::Tensor ratio = delta.exp();
  at::Tensor weighted = ratio * adv;
  at::Tensor pg = (-weighted).masked_fill(invalid, 0);

  at::Tensor pg_sum = sum_rounded(pg);
  ctx.comm->all_reduce(pg_sum);
  at::Tensor true_pg = pg_sum.to(at::kFloat) / count;
  at::Tensor surrogate = sum_rounded(weighted * ce).to(at::kFloat) / count;  // local numerator only
  at::Tensor loss = (true_pg + surrogate) - surrogate;

  const double inf = std::numeric_limits<double>::infinity();
  at::Tensor ratio_sum = sum_rounded(ratio.masked_fill(invalid, 0));
  at::Tensor ratio_min = ratio.masked_fill(invalid, inf).min();
  at::Tensor ratio_max = ratio.masked_fill(invalid, -inf).max();
  at::Tensor k3_sum = sum_rounded(((ratio - delta) - 1).masked_fill(invalid, 0));
  at::Tensor ce_sum = sum_rounded(ce);
  ctx.comm->all_reduce(ratio_sum);
  ctx.comm->all_reduce(ratio_min, ReduceOp::min);
  ctx.comm->all_reduce(ratio_max, ReduceOp::max);
  ctx.comm->all_reduce(k3_sum);
  ctx.comm->all_reduce(ce_sum);
  at::Tensor metrics = at::stack({ratio_sum.to(at::kFloat) / count, ratio_min.to(at::kFloat), ratio_max.to(at::kFloat),
                                  k3_sum.to(at::kFloat) / count, ce_sum.to(at::kFloat) / count});
  return {loss, new_lp, pg, metrics};
}

// fp64 except where the semantics materialise a value in the run dtype that later steps amplify: the logits
// (rounded before the log-sum-exp) and the per-token log-probs (an output, from which delta is taken).
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t ignore = ctx.scalar("ignore_index");
  std::vector<at::Tensor> new_lp(W), pg(W);
  double n = 0, pg_sum = 0, ratio_sum = 0, k3_sum = 0, ce_sum = 0;
  double ratio_min = std::numeric_limits<double>::infinity(), ratio_max = -ratio_min;
  for (int r = 0; r < W; ++r) {
    const at::Tensor& labels = in[r][2];
    at::Tensor logits = matmul_nt(in[r][0].to(at::kFloat), in[r][1].to(at::kFloat)).to(ctx.float_dtype).to(at::kDouble);
    at::Tensor z = logits.gather(1, labels.clamp_min(0).unsqueeze(1)).squeeze(1);
    new_lp[r] = (z - logits.logsumexp(1)).to(ctx.float_dtype).to(at::kDouble).masked_fill(labels.eq(ignore), 0);
    pg[r] = at::zeros_like(new_lp[r]);
    at::Tensor old_lp = in[r][3].to(at::kDouble), adv = in[r][4].to(at::kDouble);
    auto label = labels.accessor<int64_t, 1>();
    auto lp = new_lp[r].accessor<double, 1>(), old = old_lp.accessor<double, 1>(), a = adv.accessor<double, 1>();
    auto loss = pg[r].accessor<double, 1>();
    for (int64_t t = 0; t < labels.size(0); ++t) {
      if (label[t] == ignore) continue;
      double delta = std::min(20.0, std::max(-20.0, lp[t] - old[t]));
      double ratio = std::exp(delta);
      loss[t] = -ratio * a[t];
      n += 1;
      pg_sum += loss[t];
      ratio_sum += ratio;
      k3_sum += ratio - delta - 1;
      ce_sum += -lp[t];
      ratio_min = std::min(ratio_min, ratio);
      ratio_max = std::max(ratio_max, ratio);
    }
  }
  n = std::max(n, 1.0);
  at::Tensor loss = at::scalar_tensor(pg_sum / n, at::kFloat);
  at::Tensor metrics =
      at::tensor(std::vector<double>{ratio_sum / n, ratio_min, ratio_max, k3_sum / n, ce_sum / n}).to(at::kFloat);
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) out.push_back({loss, new_lp[r].to(ctx.float_dtype), pg[r].to(ctx.float_dtype), metrics});
  return out;
}

// Realistic sampled tokens: about 1/16 of the labels are ignored, and each valid token's hidden state is pushed
// towards its label's weight row (+12 w, with |w|^2 ~ 1) so the label's log-prob is mostly in (-2, 0).
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const int64_t ignore = ctx.scalar("ignore_index");
  at::Tensor labels = raw[2].masked_fill(raw[2].remainder(16).eq(0), ignore);
  at::Tensor valid = labels.ne(ignore).to(at::kFloat).unsqueeze(1);
  at::Tensor rows = raw[1].index_select(0, labels.clamp_min(0)).to(at::kFloat);
  raw[0] = (raw[0].to(at::kFloat) + 12.0 * valid * rows).to(raw[0].scalar_type());
  raw[2] = labels;
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("importance_sampling_loss", reference, oracle, prepare);

}  // namespace problem_025
