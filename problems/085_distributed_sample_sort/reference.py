import torch
import torch.distributed as dist


def solution(local_shard: torch.Tensor, group=None) -> torch.Tensor:
    """Distributed sample sort with exact rebalancing.

    local_shard (n_r,): this rank's values (any sizes, duplicates allowed). With V the union of all shards sorted
    ascending, T = len(V), base = T // W, extra = T % W, rank r returns V[s_r : s_r + base + (r < extra)] with
    s_r = r * base + min(r, extra).
    Sample sort: local sort, W regular samples per rank, W - 1 splitters from the sorted samples, values routed to
    buckets by the splitters (all-to-all), a local sort, then an exact rebalance (one more all-to-all).
    """
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    device = local_shard.device

    def all_gather_ints(values):
        t = torch.tensor(values, dtype=torch.int64, device=device)
        out = torch.empty(world * t.numel(), dtype=torch.int64, device=device)
        dist.all_gather_into_tensor(out, t, group=group)
        return out.view(world, -1)

    def exchange(values, send_counts):
        recv_counts = torch.empty(world, dtype=torch.int64, device=device)
        dist.all_to_all_single(recv_counts, torch.tensor(send_counts, dtype=torch.int64, device=device), group=group)
        out = values.new_empty(int(recv_counts.sum()))
        dist.all_to_all_single(out, values, recv_counts.tolist(), send_counts, group=group)
        return out

    local = local_shard.sort().values
    n = local.numel()
    total = int(all_gather_ints([n]).sum())

    # Regular sampling: W samples per rank, W - 1 splitters from the sorted samples of all ranks.
    picks = [max(0, (i + 1) * n // world - 1) for i in range(world)]
    samples = local[picks].contiguous()
    all_samples = torch.empty(world * world, dtype=samples.dtype, device=device)
    dist.all_gather_into_tensor(all_samples, samples, group=group)
    splitters = all_samples.sort().values[world - 1:world * world - 1:world]

    # Bucket q holds the values above q splitters (equal values go to one bucket); buckets are ordered.
    bucket = (local.unsqueeze(1) > splitters.unsqueeze(0)).sum(1)
    counts = torch.bincount(bucket, minlength=world).tolist()
    mine = exchange(local, counts).sort().values

    # Rebalance: this rank's bucket holds global positions [offset, offset + len); rank q's slice starts at start(q).
    sizes = all_gather_ints([mine.numel()]).view(-1).tolist()
    offset = sum(sizes[:rank])
    base, extra = divmod(total, world)
    start = [q * base + min(q, extra) for q in range(world + 1)]
    send = [max(0, min(offset + len(mine), start[q + 1]) - max(offset, start[q])) for q in range(world)]
    return exchange(mine, send)
