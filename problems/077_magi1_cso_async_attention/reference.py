import torch
import torch.distributed as dist


def _to_heads(x, world):
    """(spb, H, C) tokens of this rank -> (W spb, H/W, C): this rank's head group over the range's W spb tokens."""
    chunks = [c.contiguous() for c in x.chunk(world, dim=1)]
    received = [torch.empty_like(c) for c in chunks]
    dist.all_to_all(received, chunks)
    return torch.cat(received, dim=0)


def _to_tokens(x, world):
    """(W spb, H/W, C) -> (spb, H, C): every head of this rank's own tokens."""
    chunks = [c.contiguous() for c in x.chunk(world, dim=0)]
    received = [torch.empty_like(c) for c in chunks]
    dist.all_to_all(received, chunks)
    return torch.cat(received, dim=1)


def _attention(q, k, v, block=4096):
    """Non-causal softmax attention in fp32. q: (S, Hl, D), k, v: (T, Hl, D) -> (S, Hl, D) fp32, in query blocks."""
    q, k, v = (t.float().transpose(0, 1) for t in (q, k, v))  # (Hl, ., D)
    scale = q.shape[-1] ** -0.5
    out = [torch.softmax(q[:, i:i + block] @ k.transpose(1, 2) * scale, dim=-1) @ v
           for i in range(0, q.shape[1], block)]
    return torch.cat(out, dim=1).transpose(0, 1)


def solution(query: torch.Tensor, key_value: torch.Tensor, cp_shuffle_num: int, clip_token_nums: int) -> torch.Tensor:
    """Ulysses attention over cp_shuffle_num context ranges (MAGI-1 CSO, without the overlap).

    query: (R spb, Hq, D), key_value: (R spb, Hkv, 2D) (keys, then values), range-major local tokens. Range rho's
    sequence is the ranks' tokens [rho spb, (rho+1) spb) in rank order; its keys and values are the first
    clip_token_nums of them, its queries all. q head h uses kv head h * Hkv // Hq. Returns (R spb, Hq, D): each local
    query's attention over its range, computed in fp32 and rounded to the input dtype.
    """
    world = dist.get_world_size()
    spb, hq, d = query.shape[0] // cp_shuffle_num, query.shape[1], query.shape[2]
    group = hq // key_value.shape[1]  # q heads per kv head; head groups split evenly over ranks
    outputs = []
    for rho in range(cp_shuffle_num):
        tokens = slice(rho * spb, (rho + 1) * spb)
        q = _to_heads(query[tokens], world)
        kv = _to_heads(key_value[tokens], world)[:clip_token_nums]
        k = kv[..., :d].repeat_interleave(group, dim=1)
        v = kv[..., d:].repeat_interleave(group, dim=1)
        outputs.append(_to_tokens(_attention(q, k, v).to(query.dtype), world))
    return torch.cat(outputs, dim=0)
