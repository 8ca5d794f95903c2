import torch
import torch.distributed as dist


def solution(idx: torch.Tensor, value: torch.Tensor, num_nodes: int, group=None):
    """Route sparse embedding rows to their owners (owner = idx mod W).

    idx (nnz,) int64 node ids, value (nnz, Hd) their rows. Entries are partitioned by owner keeping their order
    within an owner and sent with all_to_all_single. Returns (recv_idx, recv_value): what this rank receives,
    by source rank 0..W-1, each source's entries in its original order.
    """
    world = dist.get_world_size(group)
    owner = idx % world
    _, order = torch.sort(owner, stable=True)
    send_idx, send_value = idx[order], value[order]

    send_counts = torch.bincount(owner, minlength=world)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    send_splits, recv_splits = send_counts.tolist(), recv_counts.tolist()

    recv_idx = idx.new_empty(sum(recv_splits))
    dist.all_to_all_single(recv_idx, send_idx, recv_splits, send_splits, group=group)
    recv_value = value.new_empty((sum(recv_splits), value.shape[1]))
    dist.all_to_all_single(recv_value, send_value, recv_splits, send_splits, group=group)
    return recv_idx, recv_value
