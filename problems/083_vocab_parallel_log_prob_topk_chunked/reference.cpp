#include "reference/vocab_topk.h"

// The filter, the exchange and the prepare are shared with problems 82 and 84: harness/src/reference/vocab_topk.h.
namespace {

using namespace pkb;
using namespace pkb::vocab_topk;

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &logits = in[0], &target = in[1];
  const int64_t tokens = target.numel(), step = target.size(0) * ctx.scalar("chunk_size");
  at::Tensor flat = logits.reshape({tokens, logits.size(-1)}), flat_target = target.reshape({tokens});
  at::Tensor out = at::empty({tokens}, logits.options().dtype(at::kFloat));
  for (int64_t start = 0; start < tokens; start += step) {
    at::Tensor chunk = flat.slice(0, start, std::min(tokens, start + step));
    const int64_t per_rank = chunk.size(0) / ctx.world, mine = start + ctx.rank * per_rank;
    at::Tensor rows = gather_rows(*ctx.comm, chunk);
    at::Tensor filtered = filter_like_pytorch(rows, ctx.scalar("top_k"));
    at::Tensor index = flat_target.slice(0, mine, mine + per_rank).unsqueeze(-1);
    at::Tensor log_probs = at::log_softmax(filtered.to(at::kFloat), -1).gather(-1, index).squeeze(-1).contiguous();
    at::Tensor gathered = at::empty({chunk.size(0)}, log_probs.options());
    ctx.comm->all_gather(log_probs, gathered);
    out.slice(0, start, start + chunk.size(0)).copy_(gathered);
  }
  return {out.view(target.sizes())};
}

// Per token in double, unchunked: the exact filter, then target logit minus log-sum-exp of the kept values.
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

PKB_REGISTER_PROBLEM_WITH_PREPARE("vocab_parallel_log_prob_topk_chunked", reference, oracle, prepare);
