import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor, dst: int = 0) -> torch.Tensor:
    """Rank `dst` returns a (W, M, N) stack of every rank's tensor in rank order; other ranks return `tensor`."""
    if dist.get_rank() == dst:
        parts = [torch.empty_like(tensor) for _ in range(dist.get_world_size())]
        dist.gather(tensor.contiguous(), gather_list=parts, dst=dst)
        return torch.stack(parts)
    dist.gather(tensor.contiguous(), dst=dst)
    return tensor
