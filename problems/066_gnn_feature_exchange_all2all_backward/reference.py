import torch
import torch.distributed as dist


def solution(grad_output: torch.Tensor, seed_inverse_ids: torch.Tensor, seed_size: int, counts_sent: torch.Tensor,
             counts_received: torch.Tensor, group=None) -> torch.Tensor:
    """Backward of the rank-rotated feature fetch: send the gradient rows back, then sum them per seed.

    grad_output (Tt, Hd) fp32 is split into W blocks of counts_sent[i] rows. List position i on rank s means peer
    (s + i) mod W: block i goes to rank (s + i) mod W, and received block c (counts_received[c] rows) comes from
    rank (r + c) mod W. The received rows, blocks in list order, are summed into seed_size rows by this rank's
    seed_inverse_ids. Returns (seed_size, Hd) fp32.
    """
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    blocks = grad_output.split(counts_sent.tolist())
    sizes = counts_received.tolist()
    send = [blocks[(peer - rank) % world].contiguous() for peer in range(world)]
    recv = [grad_output.new_empty((sizes[(peer - rank) % world], grad_output.shape[1])) for peer in range(world)]
    dist.all_to_all(recv, send, group=group)
    received = torch.cat([recv[(rank + c) % world] for c in range(world)])
    out = torch.zeros(seed_size, grad_output.shape[1], dtype=grad_output.dtype, device=grad_output.device)
    return out.index_add_(0, seed_inverse_ids, received)
