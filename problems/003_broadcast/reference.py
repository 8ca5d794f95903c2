import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    """Every rank returns a copy of rank `src`'s tensor (src defaults to 0). `tensor` is not modified."""
    out = tensor.clone()
    dist.broadcast(out, src=src)
    return out
