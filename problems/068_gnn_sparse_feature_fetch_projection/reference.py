import torch
import torch.distributed as dist


def solution(local_embedding_shard: torch.Tensor, input_node_ids: torch.Tensor, proj_matrix: torch.Tensor,
             num_total_nodes: int, group=None) -> torch.Tensor:
    """Fetch rows of a row-sharded embedding table by global id, then project them with this rank's matrix.

    Rank q holds rows [q * Ns, (q + 1) * Ns) of the global table, Ns = ceil(num_total_nodes / W).
    input_node_ids (Q,) global ids; proj_matrix (D, D). Returns table[input_node_ids] @ proj_matrix, (Q, D).
    """
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    rows_per_shard = (num_total_nodes + world - 1) // world
    owner = (input_node_ids // rows_per_shard).clamp(max=world - 1)
    _, order = torch.sort(owner, stable=True)
    send_ids = input_node_ids[order]

    send_counts = torch.bincount(owner, minlength=world)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts, group=group)
    send_splits, recv_splits = send_counts.tolist(), recv_counts.tolist()

    requested = input_node_ids.new_empty(sum(recv_splits))
    dist.all_to_all_single(requested, send_ids, recv_splits, send_splits, group=group)
    served = local_embedding_shard[requested - rank * rows_per_shard]

    fetched = served.new_empty((input_node_ids.shape[0], served.shape[1]))
    dist.all_to_all_single(fetched, served, send_splits, recv_splits, group=group)
    rows = torch.empty_like(fetched)
    rows[order] = fetched
    return rows @ proj_matrix
