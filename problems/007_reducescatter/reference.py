import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor` is (W*M, N). Rank r returns the sum over ranks of rows [r*M, (r+1)*M) as an (M, N) tensor."""
    world = dist.get_world_size()
    out = torch.empty((tensor.shape[0] // world,) + tuple(tensor.shape[1:]), dtype=tensor.dtype, device=tensor.device)
    dist.reduce_scatter_tensor(out, tensor.contiguous(), op=dist.ReduceOp.SUM)
    return out
