import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Causal depthwise conv1d under zig-zag context parallelism.

    The global sequence is 2W chunks of length L. x: (B, C, 2L) holds global chunk r in [..., :L] and chunk
    2W-1-r in [..., L:]; weight: (C, 1, K) is this rank's own filter. Returns (B, C, 2L), the causal depthwise
    cross-correlation y[g] = sum_j weight[c, 0, j] * x[g - K + 1 + j] (zeros before the sequence start) at the rank's
    global positions, laid out like x. The first chunk's halo is the tail of chunk r-1 (rank r-1's first half), the
    second chunk's the tail of chunk 2W-2-r (rank r+1's second half; the rank's own first half on the last rank).
    """
    world, rank = dist.get_world_size(), dist.get_rank()
    L, halo = x.shape[-1] // 2, weight.shape[-1] - 1
    first, second = x[..., :L], x[..., L:]
    halo_first = torch.zeros_like(first[..., :halo])
    halo_second = first[..., L - halo:].contiguous() if rank == world - 1 else torch.empty_like(halo_first)

    ops = []
    if rank + 1 < world:  # our first-half tail precedes rank r+1's first chunk; rank r+1's second-half tail ours
        ops += [dist.P2POp(dist.isend, first[..., L - halo:].contiguous(), rank + 1),
                dist.P2POp(dist.irecv, halo_second, rank + 1)]
    if rank > 0:
        ops += [dist.P2POp(dist.isend, second[..., L - halo:].contiguous(), rank - 1),
                dist.P2POp(dist.irecv, halo_first, rank - 1)]
    if ops:
        for req in dist.batch_isend_irecv(ops):
            req.wait()

    padded = torch.cat([torch.cat([halo_first, first], -1), torch.cat([halo_second, second], -1)])  # (2B, C, L+K-1)
    y = F.conv1d(padded, weight, groups=x.shape[1])
    return torch.cat([y[:x.shape[0]], y[x.shape[0]:]], -1)
