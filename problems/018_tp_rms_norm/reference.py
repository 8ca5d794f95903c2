import torch
import torch.distributed as dist


def solution(local_hidden_states: torch.Tensor, local_weight: torch.Tensor, variance_epsilon: float = 1e-5):
    """RMSNorm whose hidden dimension is sharded over all ranks.

    local_hidden_states: (M, N), this rank's N columns of the (M, N*W) hidden states; local_weight: (N,), the
    matching weight shard. Statistics in fp32 over the full row of N*W values:
    out = local_weight * (h * rsqrt(mean(h^2) + eps)).to(input dtype), with h = hidden.float(). Returns (M, N).
    """
    input_dtype = local_hidden_states.dtype
    h = local_hidden_states.to(torch.float32)
    sum_sq = h.pow(2).sum(-1, keepdim=True)
    dist.all_reduce(sum_sq, op=dist.ReduceOp.SUM)
    variance = sum_sq / (h.shape[-1] * dist.get_world_size())
    normed = h * torch.rsqrt(variance + variance_epsilon)
    return local_weight * normed.to(input_dtype)
