import torch
import torch.distributed as dist

CAPACITY = 20  # no length exceeds 20: value buffers hold 20 entries per (feature, sample)


def solution(lengths: torch.Tensor, values: torch.Tensor, batch_size: int):
    """KeyedJaggedTensor all-to-all (TorchRec KJTAllToAll) with key_splits [1 + d % 3 for d < W].

    lengths: (F * B,) int64 feature-major; values: a buffer whose first sum(lengths) entries are the jagged values in
    the same (feature, sample) order. Rank d owns features [o_d, o_d + k_d). Returns, for this rank's k features:
    lengths_out (k * W * B,) in [feature][source rank][sample] order, values_out (k * W * B * 20,) with the matching
    value segments first and zeros after, num_values, stride = W * B and stride_per_rank = [B] * W.
    """
    world, rank = dist.get_world_size(), dist.get_rank()
    B = batch_size
    key_splits = [1 + d % 3 for d in range(world)]
    offsets = [sum(key_splits[:d]) for d in range(world)]
    values = values[:int(lengths.sum())]

    # Per destination: its features' lengths and values (contiguous, since the layout is feature-major).
    length_splits = [k * B for k in key_splits]
    value_splits = [int(lengths[o * B:(o + k) * B].sum()) for o, k in zip(offsets, key_splits)]
    meta = torch.tensor([[n, v, B] for n, v in zip(length_splits, value_splits)], dtype=torch.int64, device=lengths.device)
    meta_recv = torch.empty_like(meta)
    dist.all_to_all_single(meta_recv, meta)
    recv_length_splits, recv_value_splits = meta_recv[:, 0].tolist(), meta_recv[:, 1].tolist()

    lengths_recv = lengths.new_empty(sum(recv_length_splits))
    dist.all_to_all_single(lengths_recv, lengths, recv_length_splits, length_splits)
    values_recv = values.new_empty(sum(recv_value_splits))
    dist.all_to_all_single(values_recv, values.contiguous(), recv_value_splits, value_splits)

    # Recat [source][feature][sample] -> [feature][source][sample].
    k = key_splits[rank]
    blocks = lengths_recv.view(world, k, B)
    lengths_out = blocks.transpose(0, 1).reshape(-1)
    segments = values_recv.split(blocks.sum(dim=2).reshape(-1).tolist())  # one per (source, feature)
    recat = torch.cat([segments[s * k + f] for f in range(k) for s in range(world)])

    values_out = values.new_zeros(k * world * B * CAPACITY)
    values_out[:recat.numel()] = recat
    num_values = torch.tensor(recat.numel(), dtype=torch.int64, device=lengths.device)
    stride = torch.tensor(world * B, dtype=torch.int64, device=lengths.device)
    stride_per_rank = torch.full((world,), B, dtype=torch.int64, device=lengths.device)
    return lengths_out, values_out, num_values, stride, stride_per_rank
