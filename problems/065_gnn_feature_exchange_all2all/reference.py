import torch
import torch.distributed as dist


def solution(local_features: torch.Tensor, seed_inverse_ids: torch.Tensor, counts_sent: torch.Tensor,
             counts_received: torch.Tensor, group=None) -> torch.Tensor:
    """Feature fetch with GraphBolt's rank-rotated all-to-all.

    local_features (Sz, Hd); seed_inverse_ids (Tt,) rows to fetch. The fetched rows are split into W blocks of
    counts_sent[i] rows. List position i on rank s means peer (s + i) mod W: block i goes to rank (s + i) mod W,
    and output block c (counts_received[c] rows) comes from rank (r + c) mod W.
    Returns the received rows (sum(counts_received), Hd), blocks in list order.
    """
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    fetched = local_features.index_select(0, seed_inverse_ids)
    blocks = fetched.split(counts_sent.tolist())
    sizes = counts_received.tolist()
    # torch.distributed lists are indexed by peer; GraphBolt's by offset from this rank.
    send = [blocks[(peer - rank) % world].contiguous() for peer in range(world)]
    recv = [fetched.new_empty((sizes[(peer - rank) % world], fetched.shape[1])) for peer in range(world)]
    dist.all_to_all(recv, send, group=group)
    return torch.cat([recv[(rank + c) % world] for c in range(world)])
