import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor, src: int = 0) -> torch.Tensor:
    """Rank `src` holds a (W, M, N) tensor; rank r returns slice r as a new (M, N) tensor.
    On other ranks `tensor` is an (M, N) placeholder that is only used for its shape and dtype."""
    if dist.get_rank() == src:
        out = torch.empty_like(tensor[0])
        dist.scatter(out, scatter_list=[s.contiguous() for s in tensor.unbind(0)], src=src)
    else:
        out = torch.empty_like(tensor)
        dist.scatter(out, src=src)
    return out
