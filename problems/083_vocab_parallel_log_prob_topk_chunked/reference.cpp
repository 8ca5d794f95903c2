#include "reference/vocab_topk.h"

// The filter, the exchange and the prepare are shared with problems 82 and 84: harness/src/reference/vocab_topk.h.
namespace problem_083 {  // named, not anonymous: the references build as unity batches

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

PKB_REGISTER_PROBLEM_WITH_PREPARE("vocab_parallel_log_prob_topk_chunked", reference, log_prob_oracle, prepare);

}  // namespace problem_083
