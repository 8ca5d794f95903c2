import torch
import torch.distributed as dist


def _seq_to_heads(x, world, group):
    """(B, S, H, D) sequence shard, all heads -> (B, W*S, H/W, D) full sequence, this rank's head group."""
    send = [c.contiguous() for c in torch.tensor_split(x, world, dim=2)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send, group=group)
    return torch.cat(recv, dim=1)


def _heads_to_seq(x, world, group):
    """(B, W*S, G, D) full sequence, head group -> (B, S, W*G, D) sequence shard, all heads."""
    send = [c.contiguous() for c in torch.tensor_split(x, world, dim=1)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send, group=group)
    return torch.cat(recv, dim=2)


def solution(hidden_states, w_qkv, w_o, num_heads: int, group=None, causal=False):
    """DeepSpeed-Ulysses self-attention layer (no bias, not causal).

    hidden_states (B, S, H*D) holds global positions [r*S, (r+1)*S) of the sequence; w_qkv (3*H*D, H*D) and
    w_o (H*D, H*D) are this rank's projections. qkv = hidden @ w_qkv^T, columns [q | k | v], each H heads of D.
    An all-to-all gives every rank the full sequence (W*S positions) of H/W heads; each head attends over the
    whole sequence, softmax(q k^T / sqrt(D)) v; a second all-to-all returns every rank its own positions with all
    heads, and out = o @ w_o^T. Returns out (B, S, H*D).
    """
    assert not causal
    world = dist.get_world_size(group)
    b, s, width = hidden_states.shape
    head_dim = width // num_heads
    qkv = (hidden_states @ w_qkv.t()).view(b, s, 3, num_heads, head_dim)
    q, k, v = (_seq_to_heads(qkv[:, :, i], world, group) for i in range(3))   # (B, W*S, G, D) each

    q, k, v = (t.transpose(1, 2) for t in (q, k, v))                            # (B, G, W*S, D)
    scores = (q @ k.transpose(-1, -2)) * head_dim ** -0.5
    o = torch.softmax(scores, dim=-1) @ v                                       # (B, G, W*S, D)

    o = _heads_to_seq(o.transpose(1, 2), world, group)                          # (B, S, H, D)
    return o.reshape(b, s, width) @ w_o.t()
