import torch
import torch.distributed as dist


def solution(vocab_parallel_logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy over logits sharded along the vocabulary (Megatron's vocab_parallel_cross_entropy forward).

    vocab_parallel_logits: (B, S, V/W), vocab ids [r V/W, (r+1) V/W) of this rank; target: (B, S) global ids, the
    same on every rank. Returns loss (B, S) = log(sum_v exp(logit_v - m)) - (logit_target - m) with m the global max,
    the same on every rank.
    """
    rank = dist.get_rank()
    vocab_local = vocab_parallel_logits.shape[-1]
    start, end = rank * vocab_local, (rank + 1) * vocab_local

    logits_max = vocab_parallel_logits.max(dim=-1).values
    dist.all_reduce(logits_max, op=dist.ReduceOp.MAX)
    shifted = vocab_parallel_logits - logits_max.unsqueeze(-1)

    # The target's shifted logit, from the rank that owns it (0 elsewhere), summed over ranks.
    target_mask = (target < start) | (target >= end)
    local_target = (target - start).masked_fill(target_mask, 0)
    predicted = shifted.gather(-1, local_target.unsqueeze(-1)).squeeze(-1).masked_fill(target_mask, 0.0)
    dist.all_reduce(predicted)

    sum_exp = shifted.exp().sum(dim=-1)
    dist.all_reduce(sum_exp)
    return sum_exp.log() - predicted
