import torch
import torch.distributed as dist


def _exchange(send: torch.Tensor, send_splits, recv_splits, group):
    recv = send.new_empty(sum(recv_splits))
    dist.all_to_all_single(recv, send, recv_splits, send_splits, group=group)
    return recv


def _sample(colptr, col, nodes, fanout):
    """First min(fanout, degree) in-neighbours of each node: (per-node counts, neighbours, edge ids)."""
    start = colptr[nodes]
    take = (colptr[nodes + 1] - start).clamp(max=fanout)
    segment_start = torch.repeat_interleave(torch.cumsum(take, 0) - take, take)
    edges = torch.repeat_interleave(start, take) + torch.arange(int(take.sum()), device=nodes.device) - segment_start
    return take, col[edges], edges


def solution(seed_nodes: torch.Tensor, fanout_0: int, fanout_1: int, local_adj_row_ptr: torch.Tensor,
             local_adj_col: torch.Tensor, node_to_rank: torch.Tensor, group=None, replace: bool = False):
    """Two-hop first-k neighbour sampling; frontier nodes are sampled by their owner rank.

    The CSC graph (local_adj_row_ptr, local_adj_col) and node_to_rank are the same on every rank. Per hop:
    frontier nodes go to their owners, which reply with their first min(fanout, degree) in-neighbours and edge
    ids; the replies are laid out in frontier order, and nodes not yet seen are appended to the node list in order
    of first appearance and form the next frontier. Local id = position in the node list.
    Returns (node, row, col, edge, counts): the node list and the relabelled edges (row: sampled neighbour,
    col: the frontier node it was sampled for), padded with -1 to fixed capacities, and counts = [nodes, edges].
    """
    world = dist.get_world_size(group)
    device = seed_nodes.device
    node_ids = {v: i for i, v in enumerate(seed_nodes.tolist())}
    frontier = seed_nodes
    hop_nodes, hop_dst, hop_edges = [], [], []
    for fanout in (fanout_0, fanout_1):
        owner = node_to_rank[frontier]
        order = torch.sort(owner, stable=True)[1]
        send_splits = torch.bincount(owner, minlength=world).tolist()
        recv_splits = _exchange(torch.tensor(send_splits, device=device), [1] * world, [1] * world, group).tolist()
        requested = _exchange(frontier[order], send_splits, recv_splits, group)

        take, neighbours, edges = _sample(local_adj_row_ptr, local_adj_col, requested, fanout)
        reply_splits = [int(t.sum()) for t in take.split(recv_splits)]
        my_take = _exchange(take, recv_splits, send_splits, group)  # per node, in the order sent
        got_splits = [int(t.sum()) for t in my_take.split(send_splits)]
        got_nodes = _exchange(neighbours, reply_splits, got_splits, group)
        got_edges = _exchange(edges, reply_splits, got_splits, group)

        # Back to frontier order: the segment of sorted position i belongs to frontier position order[i].
        segments_nodes = got_nodes.split(my_take.tolist())
        segments_edges = got_edges.split(my_take.tolist())
        position = torch.empty_like(order)
        position[order] = torch.arange(order.numel(), device=device)
        position = position.tolist()
        out_nodes = torch.cat([segments_nodes[i] for i in position] + [got_nodes[:0]])
        out_edges = torch.cat([segments_edges[i] for i in position] + [got_edges[:0]])
        take_in_order = my_take[position] if frontier.numel() else my_take
        out_dst = torch.repeat_interleave(frontier, take_in_order)

        new_nodes = []
        for v in out_nodes.tolist():
            if v not in node_ids:
                node_ids[v] = len(node_ids)
                new_nodes.append(v)
        hop_nodes.append(out_nodes)
        hop_dst.append(out_dst)
        hop_edges.append(out_edges)
        frontier = torch.tensor(new_nodes, dtype=seed_nodes.dtype, device=device)

    all_nodes, all_dst, all_edges = torch.cat(hop_nodes), torch.cat(hop_dst), torch.cat(hop_edges)
    row = torch.tensor([node_ids[v] for v in all_nodes.tolist()], dtype=torch.int64, device=device)
    col = torch.tensor([node_ids[v] for v in all_dst.tolist()], dtype=torch.int64, device=device)

    seeds = seed_nodes.numel()
    node_capacity = min(node_to_rank.numel(), seeds * (1 + fanout_0 + fanout_0 * fanout_1))
    edge_capacity = seeds * (fanout_0 + fanout_0 * fanout_1)

    def padded(values, capacity):
        out = torch.full((capacity,), -1, dtype=torch.int64, device=device)
        out[:values.numel()] = values
        return out

    node = torch.tensor(list(node_ids), dtype=torch.int64, device=device)
    counts = torch.tensor([node.numel(), row.numel()], dtype=torch.int64, device=device)
    return (padded(node, node_capacity), padded(row, edge_capacity), padded(col, edge_capacity),
            padded(all_edges, edge_capacity), counts)
