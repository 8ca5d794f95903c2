import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, stride: int = 1, padding: int = 1,
             group=None) -> torch.Tensor:
    """Patch-parallel conv2d: this rank's row band of the image, convolved with halo rows from its neighbours.

    x (1, C, H, W): this rank's band of the global image (bands in rank order along H). weight (C_out, C, k, k) and
    bias (C_out,): this rank's own. Returns conv2d(global image, weight, bias, stride, padding) restricted to the
    band: the top `padding` rows come from the previous rank (zeros at rank 0), the bottom ones from the next rank
    (zeros at the last rank); the width is zero-padded.
    """
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    edges = torch.stack([x[:, :, :padding], x[:, :, -padding:]]).contiguous()   # (2, 1, C, p, W)
    gathered = torch.empty((world,) + edges.shape, dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(gathered, edges, group=group)
    top = gathered[rank - 1, 1] if rank > 0 else torch.zeros_like(edges[0])
    bottom = gathered[rank + 1, 0] if rank < world - 1 else torch.zeros_like(edges[0])
    band = torch.cat([top, x, bottom], dim=2)
    return F.conv2d(band, weight, bias, stride=stride, padding=(0, padding))
