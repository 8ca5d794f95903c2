import torch
import torch.distributed as dist


def _block_attention(q, k, v, scale, causal):
    """fp32 attention of q against one k, v block: out (B, S, H, D) and lse (B, H, S)."""
    s = torch.einsum("bshd,bthd->bhst", q, k) * scale
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    out = torch.einsum("bhst,bthd->bshd", torch.exp(s - lse.unsqueeze(-1)), v)
    return out, lse


def _ring_attention(q, k, v, scale, group, ranks):
    """Causal ring attention over `group`, whose members are the global `ranks` in ring order (contiguous shards, no
    zigzag): K/V travel around the ring; ring position c merges its own block (masked), then the blocks of positions
    c-1, c-2, ..., 0 through lse. fp32 inside, fp32 out."""
    size, c = len(ranks), ranks.index(dist.get_rank())
    q32 = q.float()
    out, lse = _block_attention(q32, k.float(), v.float(), scale, True)
    k_cur, v_cur = k.contiguous(), v.contiguous()
    for step in range(1, size):
        k_next, v_next = torch.empty_like(k_cur), torch.empty_like(v_cur)
        ops = [dist.P2POp(dist.isend, k_cur, ranks[(c + 1) % size], group), dist.P2POp(dist.isend, v_cur, ranks[(c + 1) % size], group),
               dist.P2POp(dist.irecv, k_next, ranks[(c - 1) % size], group), dist.P2POp(dist.irecv, v_next, ranks[(c - 1) % size], group)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        k_cur, v_cur = k_next, v_next
        if step <= c:  # the block of rank c - step; later ranks' blocks are fully masked
            o, l = _block_attention(q32, k_cur.float(), v_cur.float(), scale, False)
            out = out - torch.sigmoid(l - lse).transpose(1, 2).unsqueeze(-1) * (out - o)
            lse = lse - torch.nn.functional.logsigmoid(lse - l)
    return out


def solution(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
    """Causal ring attention over all ranks (contiguous sequence shards).

    q, k, v: (B, S, H, D), this rank's positions [r*S, (r+1)*S) of a sequence of length W*S. Returns
    out (B, S, H, D) = causal softmax(0.125 * q k^T) v over the global sequence, computed in fp32 and cast back.
    softmax_scale = None (D^-1/2), causal = True and group = None (the world) are PKB's fixed arguments.
    """
    world = dist.get_world_size()
    scale = q.shape[-1] ** -0.5
    return _ring_attention(q, k, v, scale, None, list(range(world))).to(q.dtype)
