#include "reference/vocab_topk.h"

// The filter, the exchange and the prepare are shared with problems 83-84: harness/src/reference/vocab_topk.h.
namespace problem_082 {  // named, not anonymous: the references build as unity batches

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

PKB_REGISTER_PROBLEM_WITH_PREPARE("vocab_parallel_log_prob_topk", reference, log_prob_oracle, prepare);

}  // namespace problem_082
