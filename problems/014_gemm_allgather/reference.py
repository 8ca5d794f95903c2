import torch
import torch.distributed as dist


@torch.no_grad()
def solution(A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """A: (M, K), B: (K, N/W), both different on every rank.

    Returns (M, N), identical on every rank: column block q (columns [q*N/W, (q+1)*N/W)) is A_q @ B_q.
    """
    world = dist.get_world_size()
    C = torch.matmul(A, B).contiguous()
    blocks = [torch.empty_like(C) for _ in range(world)]
    dist.all_gather(blocks, C)
    return torch.cat(blocks, dim=1)
