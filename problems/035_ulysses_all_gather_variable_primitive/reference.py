import torch
import torch.distributed as dist


def solution(x: torch.Tensor, gather_dim: int, group=None) -> torch.Tensor:
    """All-gather tensors whose sizes differ along gather_dim, concatenated in rank order along it.

    Rank r holds x_r; every rank first learns every shape, then gathers the data. Returns cat(x_0, ..., x_{W-1}).
    """
    world = dist.get_world_size(group)
    if world == 1:
        return x.clone()
    shape = torch.tensor(x.shape, dtype=torch.int64, device=x.device)
    shapes = torch.empty((world, x.dim()), dtype=torch.int64, device=x.device)
    dist.all_gather_into_tensor(shapes, shape, group=group)
    sizes = shapes[:, gather_dim].tolist()
    # Pad every shard to the largest size so one equal-size gather carries them all (works on every backend).
    longest = max(sizes)
    moved = x.movedim(gather_dim, 0)
    padded = moved.new_zeros((longest,) + tuple(moved.shape[1:]))
    padded[: moved.shape[0]] = moved
    gathered = padded.new_empty((world * longest,) + tuple(moved.shape[1:]))
    dist.all_gather_into_tensor(gathered, padded.contiguous(), group=group)
    parts = [gathered[q * longest : q * longest + sizes[q]] for q in range(world)]
    return torch.cat(parts, dim=0).movedim(0, gather_dim).contiguous()
