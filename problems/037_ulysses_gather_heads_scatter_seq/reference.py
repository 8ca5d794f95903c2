import torch
import torch.distributed as dist


def solution(x: torch.Tensor, seq_dim: int, head_dim: int, group=None) -> torch.Tensor:
    """Ulysses all-to-all after attention: scatter seq_dim, gather head_dim.

    x (B, T, H, D) holds the full sequence of this rank's heads. The sequence is zero-padded to a multiple of W
    and split into W chunks; chunk q goes to rank q. The received chunks are concatenated along the heads in
    source-rank order: out_r[b, s, q*H + h, d] = x_q[b, r*S/W + s, h, d], shape (B, S/W, W*H, D), S the padded T.
    """
    world = dist.get_world_size(group)
    pad = (-x.shape[seq_dim]) % world
    if pad:
        shape = list(x.shape)
        shape[seq_dim] = pad
        x = torch.cat([x, x.new_zeros(shape)], dim=seq_dim)
    send = [c.contiguous() for c in torch.tensor_split(x, world, dim=seq_dim)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send, group=group)
    return torch.cat(recv, dim=head_dim).contiguous()
