import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor, dst: int) -> torch.Tensor:
    """Rank `dst` returns the elementwise sum over ranks; other ranks return a copy of their own input."""
    out = tensor.clone()
    dist.reduce(out, dst=dst, op=dist.ReduceOp.SUM)
    return out
