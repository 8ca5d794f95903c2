import torch
import torch.distributed as dist


def solution(x: torch.Tensor, seq_dim: int, head_dim: int, unpadded_dim_size: int = 0, group=None) -> torch.Tensor:
    """Ulysses all-to-all before attention: scatter head_dim, gather seq_dim.

    x (B, T, H, D) is this rank's sequence chunk with all heads. Head group q (H/W heads) goes to rank q; the
    received chunks are concatenated along the sequence in source-rank order:
    out_r[b, q*T + t, h, d] = x_q[b, t, r*H/W + h, d], shape (B, W*T, H/W, D).
    A non-zero unpadded_dim_size truncates the gathered sequence to that length.
    """
    world = dist.get_world_size(group)
    send = [c.contiguous() for c in torch.tensor_split(x, world, dim=head_dim)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send, group=group)
    out = torch.cat(recv, dim=seq_dim)
    if unpadded_dim_size and unpadded_dim_size % world != 0:
        out = out.narrow(seq_dim, 0, unpadded_dim_size)
    return out.contiguous()
