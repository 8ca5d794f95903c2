#include "reference/vocab_topk.h"

// The filter, the exchange and the prepare are shared with problems 82-83: harness/src/reference/vocab_topk.h.
namespace problem_084 {  // named, not anonymous: the references build as unity batches

using namespace pkb;
using namespace pkb::vocab_topk;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &logits = in[0], &target = in[1], &grad_output = in[2];
  const int64_t tokens = target.numel(), vl = logits.size(-1), step = target.size(0) * ctx.scalar("chunk_size");
  at::Tensor flat = logits.reshape({tokens, vl}), flat_target = target.reshape({tokens});
  at::Tensor flat_grad = grad_output.reshape({tokens}).to(at::kFloat);
  at::Tensor out = at::empty({tokens, vl}, logits.options().dtype(at::kFloat));
  for (int64_t start = 0; start < tokens; start += step) {
    at::Tensor chunk = flat.slice(0, start, std::min(tokens, start + step));
    const int64_t per_rank = chunk.size(0) / ctx.world, mine = start + ctx.rank * per_rank;
    at::Tensor filtered = filter_like_pytorch(gather_rows(*ctx.comm, chunk), ctx.scalar("top_k"));
    at::Tensor kept = at::isfinite(filtered);
    at::Tensor probs = at::softmax(filtered.to(at::kFloat), -1);
    at::Tensor onehot =
        at::zeros_like(probs).scatter_(-1, flat_target.slice(0, mine, mine + per_rank).unsqueeze(-1), 1.0);
    at::Tensor grad = flat_grad.slice(0, mine, mine + per_rank).unsqueeze(-1) * kept * (onehot - probs);
    out.slice(0, start, start + chunk.size(0)).copy_(scatter_rows(*ctx.comm, grad));
  }
  return {out.view(logits.sizes())};
}

// Per token in double, unchunked: the exact filter's kept set K, p = softmax over K, g (1[v = target] - p_v) on K.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  at::Tensor rows = full_rows(in), target = in[0][1].reshape({-1}), g = in[0][2].reshape({-1}).to(at::kDouble);
  at::Tensor grad = at::zeros_like(rows);
  for (int64_t t = 0; t < rows.size(0); ++t) {
    std::vector<double> row = row_vector(rows, t);
    RowFilter f = filter_exact(row, ctx.scalar("top_k"));
    KeptSoftmax s = kept_softmax(row, f.kept);
    const int64_t tgt = target[t].item<int64_t>();
    const double gt = g[t].item<double>();
    for (size_t v = 0; v < row.size(); ++v)
      if (f.kept[v]) grad[t][v] = gt * ((static_cast<int64_t>(v) == tgt ? 1.0 : 0.0) - s.prob(row[v]));
  }
  const int64_t vl = in[0][0].size(-1);
  std::vector<Tensors> out;
  for (int r = 0; r < ctx.world; ++r)
    out.push_back({grad.slice(1, r * vl, (r + 1) * vl).reshape(in[r][0].sizes()).to(at::kFloat)});
  return out;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("vocab_parallel_log_prob_topk_chunked_backward", reference, oracle, prepare);

}  // namespace problem_084
