#include "reference/vocab_topk.h"

// The filter, the exchange and the prepare are shared with problems 83-84: harness/src/reference/vocab_topk.h.
namespace {

using namespace pkb;
using namespace pkb::vocab_topk;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &logits = in[0], &target = in[1];
  const int64_t tokens = target.numel(), per_rank = tokens / ctx.world;
  at::Tensor rows = gather_rows(*ctx.comm, logits.reshape({tokens, logits.size(-1)}));
  at::Tensor mine = target.reshape({tokens}).slice(0, ctx.rank * per_rank, (ctx.rank + 1) * per_rank);
  at::Tensor filtered = filter_like_pytorch(rows, ctx.scalar("top_k"));
  at::Tensor log_probs = at::log_softmax(filtered.to(at::kFloat), -1).gather(-1, mine.unsqueeze(-1)).squeeze(-1);
  at::Tensor gathered = at::empty({tokens}, log_probs.options());
  ctx.comm->all_gather(log_probs.contiguous(), gathered);
  return {gathered.view(target.sizes())};
}

// Per token in double: the exact filter, then target logit minus log-sum-exp of the kept values.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  at::Tensor rows = full_rows(in), target = in[0][1].reshape({-1});
  at::Tensor out = at::empty({rows.size(0)}, at::kDouble);
  for (int64_t t = 0; t < rows.size(0); ++t) {
    std::vector<double> row = row_vector(rows, t);
    RowFilter f = filter_exact(row, ctx.scalar("top_k"));
    double top = *std::max_element(row.begin(), row.end()), sum = 0;
    for (size_t v = 0; v < row.size(); ++v)
      if (f.kept[v]) sum += std::exp(row[v] - top);
    out[t] = row[target[t].item<int64_t>()] - top - std::log(sum);
  }
  return std::vector<Tensors>(ctx.world, Tensors{out.view(in[0][1].sizes()).to(at::kFloat)});
}

Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  return prepare_logits(ctx, rank, std::move(raw), ctx.scalar("top_k"));
}

}  // namespace

PKB_REGISTER_PROBLEM_WITH_PREPARE("vocab_parallel_log_prob_topk", reference, oracle, prepare);
