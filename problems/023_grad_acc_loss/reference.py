import torch
import torch.distributed as dist


def solution(loss: torch.Tensor, local_valid_tokens: torch.Tensor, global_valid_tokens: torch.Tensor,
             grad_normalized_loss: torch.Tensor, grad_loss_sum: torch.Tensor):
    """Forward and hand-written backward of loss normalisation by the global valid-token count (all 0-dim).

    loss_sum = all_reduce_sum(loss * local_valid_tokens); normalized_loss = loss_sum / global_valid_tokens;
    grad_loss = grad_normalized_loss * local_valid_tokens / global_valid_tokens + grad_loss_sum * local_valid_tokens.
    Token counts are cast to loss.dtype; every op and the all-reduce work in that dtype. A NaN loss counts as 0
    on a rank without valid tokens. Returns (normalized_loss, loss_sum, grad_loss).
    """
    local = local_valid_tokens.to(loss.dtype)
    global_ = global_valid_tokens.to(loss.dtype)
    loss = torch.where((local_valid_tokens == 0) & torch.isnan(loss), torch.zeros_like(loss), loss)

    loss_sum = loss * local
    dist.all_reduce(loss_sum, op=dist.ReduceOp.SUM)
    normalized_loss = loss_sum / global_
    grad_loss = grad_normalized_loss * local / global_ + grad_loss_sum * local
    return normalized_loss, loss_sum, grad_loss
