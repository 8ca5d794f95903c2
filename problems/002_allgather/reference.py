import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor) -> torch.Tensor:
    """Stack every rank's (M, N) tensor, in rank order, into a (W, M, N) tensor on every rank."""
    world = dist.get_world_size()
    out = torch.empty((world,) + tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device)
    dist.all_gather_into_tensor(out, tensor.contiguous())
    return out
