import torch
import torch.distributed as dist


@torch.no_grad()
def solution(indices: torch.Tensor, local_shard: torch.Tensor) -> torch.Tensor:
    """Looks up rows of a row-sharded table (rank q holds global rows [q*M, (q+1)*M) as local_shard).

    indices: (M,) int64 global row ids in [0, W*M). Returns (M, N): the rows for this rank's indices in
    owner-grouped order, i.e. indices stably partitioned by owner = index // M (owner 0 first, query order
    within an owner), not in query order.
    """
    world = dist.get_world_size()
    rank = dist.get_rank()
    rows_per_shard = local_shard.shape[0]
    owner = indices // rows_per_shard
    per_owner = [indices[owner == q] for q in range(world)]  # boolean masks keep query order

    send_counts = torch.tensor([len(p) for p in per_owner], dtype=torch.long, device=indices.device)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    send_splits, recv_splits = send_counts.tolist(), recv_counts.tolist()

    requested = torch.empty(sum(recv_splits), dtype=torch.long, device=indices.device)
    dist.all_to_all_single(requested, torch.cat(per_owner), recv_splits, send_splits)
    served = local_shard[(requested - rank * rows_per_shard).clamp(0, rows_per_shard - 1)]

    out = torch.empty((indices.shape[0], local_shard.shape[1]), dtype=local_shard.dtype, device=local_shard.device)
    dist.all_to_all_single(out, served, send_splits, recv_splits)
    return out
