import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    """Rank r returns x + (x of rank (r + 1) % W); with two ranks, each adds the other's x. x is not modified."""
    rank, world = dist.get_rank(), dist.get_world_size()
    peer_x = torch.empty_like(x)
    ops = [dist.P2POp(dist.isend, x.contiguous(), (rank - 1) % world),  # rank r - 1 adds our x
           dist.P2POp(dist.irecv, peer_x, (rank + 1) % world)]
    for req in dist.batch_isend_irecv(ops):
        req.wait()
    return x + peer_x
