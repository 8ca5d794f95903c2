import torch
import torch.distributed as dist


def _rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos.unsqueeze(2) + rotated * sin.unsqueeze(2)


def _gather_sequence(local):
    shards = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(shards, local.contiguous())
    return torch.cat(shards, dim=1)


def solution(q_local: torch.Tensor, k_local: torch.Tensor, cos_local: torch.Tensor, sin_local: torch.Tensor):
    """Rotary embedding on this rank's sequence shard, then an all-gather along the sequence.

    q_local, k_local: (B, S, H, D); cos_local, sin_local: (B, S, D), broadcast over the head axis H.
    x_emb = x * cos + rotate_half(x) * sin with rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]).
    Returns (q_global, k_global), each (B, W*S, H, D): rank q's shard at sequence positions [q*S, (q+1)*S).
    """
    q_emb = _rope(q_local, cos_local, sin_local)
    k_emb = _rope(k_local, cos_local, sin_local)
    return _gather_sequence(q_emb), _gather_sequence(k_emb)
