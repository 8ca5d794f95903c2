import torch
import torch.distributed as dist


def solution(x: torch.Tensor, group=None) -> torch.Tensor:
    """All-gather along dim 0 into one contiguous tensor: rows [q*M, (q+1)*M) of the (W*M, N) result are rank q's x."""
    world = dist.get_world_size(group)
    if world == 1:
        return x.clone()
    out = x.new_empty((world * x.shape[0],) + tuple(x.shape[1:]))
    dist.all_gather_into_tensor(out, x.contiguous(), group=group)
    return out
