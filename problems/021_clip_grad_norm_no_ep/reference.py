import torch
import torch.distributed as dist


def solution(grad_0: torch.Tensor, grad_1: torch.Tensor, grad_2: torch.Tensor, max_norm: int, norm_type: int):
    """Global gradient-norm clipping over FSDP shards (every rank holds disjoint shards of the gradients).

    total_norm = (sum over all ranks and the 3 gradients of ||g||_p^p)^(1/p), p = norm_type, norms in fp32.
    If total_norm > max_norm every gradient is scaled by max_norm / total_norm (fp32, rounded once to its dtype),
    otherwise it is unchanged. The inputs are not modified.
    Returns (total_norm, grad_0_clipped, grad_1_clipped, grad_2_clipped); total_norm is a 0-dim fp32 tensor.
    """
    grads = (grad_0, grad_1, grad_2)
    total = torch.zeros((), dtype=torch.float32, device=grad_0.device)
    for g in grads:
        total = total + torch.linalg.vector_norm(g.float(), norm_type).pow(norm_type)
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    total_norm = total.pow(1.0 / norm_type)
    coef = (max_norm / total_norm).clamp(max=1.0)
    return (total_norm, *[(g.float() * coef).to(g.dtype) for g in grads])
