import torch
import torch.distributed as dist


def solution(hidden_states: torch.Tensor, weight: torch.Tensor, labels: torch.Tensor, old_logprobs: torch.Tensor,
             advantages: torch.Tensor, ignore_index: int = -100):
    """Importance-sampling policy-gradient loss over an LM head, normalised by the valid-token count of all ranks.

    new_lp[t] = log_softmax(hidden_states @ weight.T)[t, labels[t]] (0 where labels[t] == ignore_index).
    n = valid tokens over all ranks (at least 1). On valid tokens: delta = clamp(new_lp - old_lp, -20, 20),
    ratio = exp(delta), pg = -ratio * advantages (delta = 0 and pg = 0 on ignored tokens).
    Returns (loss, new_lp, pg, metrics):
      loss: 0-dim float32, sum of pg over all ranks / n (written as (pg + s) - s with s the local surrogate
            sum(ratio * advantages * ce) / n, ce = -new_lp, which has no effect on the value);
      metrics: float32 [mean ratio, min ratio, max ratio, mean (ratio - delta - 1), mean ce] over all ranks' valid tokens.
    """
    valid = labels != ignore_index
    logits = hidden_states @ weight.t()
    ce = torch.nn.functional.cross_entropy(logits, labels, ignore_index=ignore_index, reduction="none")
    new_logprobs = -ce

    num_valid = valid.sum().float()
    dist.all_reduce(num_valid)
    num_valid = num_valid.clamp(min=1)

    delta = (new_logprobs - old_logprobs).clamp(-20, 20).masked_fill(~valid, 0)
    ratio = delta.exp()
    weighted = ratio * advantages
    per_token_loss = (-weighted).masked_fill(~valid, 0)

    pg_sum = per_token_loss.sum()
    dist.all_reduce(pg_sum)
    true_pg = pg_sum / num_valid
    surrogate = (weighted.detach() * ce).sum() / num_valid  # local numerator only
    loss = (true_pg + surrogate) - surrogate

    ratio_sum = ratio.masked_fill(~valid, 0).sum()
    ratio_min = ratio.masked_fill(~valid, float("inf")).min()
    ratio_max = ratio.masked_fill(~valid, float("-inf")).max()
    k3_sum = (ratio - delta - 1).masked_fill(~valid, 0).sum()
    ce_sum = ce.sum()
    dist.all_reduce(ratio_sum)
    dist.all_reduce(ratio_min, op=dist.ReduceOp.MIN)
    dist.all_reduce(ratio_max, op=dist.ReduceOp.MAX)
    dist.all_reduce(k3_sum)
    dist.all_reduce(ce_sum)
    metrics = torch.stack([(ratio_sum / num_valid).float(), ratio_min.float(), ratio_max.float(),
                           (k3_sum / num_valid).float(), (ce_sum / num_valid).float()])
    return loss, new_logprobs, per_token_loss, metrics
