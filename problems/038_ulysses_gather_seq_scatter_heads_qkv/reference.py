import torch
import torch.distributed as dist


def solution(qkv_tensor: torch.Tensor, seq_dim: int, group=None, unpadded_dim_size=None, restore_shape=True):
    """Ulysses all-to-all on a fused QKV output (B, T, 3*H*D), columns [q | k | v].

    Each of the three sections is split into W head groups; group q of q, k and v goes to rank q, and the received
    chunks are concatenated along the sequence in source-rank order. Each output row is
    [q of head group r | k of head group r | v of head group r]: shape (B, W*T, 3*H*D/W).
    """
    world = dist.get_world_size(group)
    b, t, width = qkv_tensor.shape
    sections = qkv_tensor.view(b, t, 3, width // 3)                       # (B, T, 3, H*D)
    send = [c.contiguous() for c in torch.tensor_split(sections, world, dim=3)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send, group=group)
    out = torch.cat(recv, dim=seq_dim)                                    # (B, W*T, 3, H*D/W)
    if unpadded_dim_size and unpadded_dim_size % world != 0:
        out = out.narrow(seq_dim, 0, unpadded_dim_size)
    if restore_shape:
        out = out.reshape(out.shape[0], out.shape[1], -1)
    return out.contiguous()
