import torch
import torch.distributed as dist

_groups = {}


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


def _tp_cp_groups(tp: int, cp: int):
    """Rank r = cp_rank * tp + tp_rank: TP pairs {2c, 2c+1}, CP rings {t, t+tp, ...}; created once, in the same order."""
    if (tp, cp) not in _groups:
        tp_groups = [dist.new_group([c * tp + t for t in range(tp)]) for c in range(cp)]
        cp_rings = [[c * tp + t for c in range(cp)] for t in range(tp)]
        cp_groups = [dist.new_group(ring) for ring in cp_rings]
        r = dist.get_rank()
        _groups[(tp, cp)] = (tp_groups[r // tp], cp_groups[r % tp], cp_rings[r % tp])
    return _groups[(tp, cp)]


def solution(hidden_states: torch.Tensor, w_qkv: torch.Tensor, w_o: torch.Tensor, num_heads: int):
    """Attention layer with tensor parallelism over heads x causal ring attention over the sequence ("tp-cp" order).

    tp = min(2, W), cp = W / tp, rank r = cp_rank * tp + tp_rank. hidden_states (B, S, hidden): positions
    [cp_rank*S, (cp_rank+1)*S), the same on both ranks of a TP pair. w_qkv (3*Hl*D, hidden), rows [q | k | v] for
    this TP rank's Hl = num_heads / tp heads; w_o (hidden, Hl*D). qkv = hidden @ w_qkv^T; causal ring attention over
    the CP group (fp32 inside, cast back); out_p = attn @ w_o^T; out = SUM of out_p over the TP pair. Returns
    (B, S, hidden).
    """
    world = dist.get_world_size()
    tp = min(2, world)
    tp_group, cp_group, ring = _tp_cp_groups(tp, world // tp)
    b, s, _ = hidden_states.shape
    head_dim = w_qkv.shape[0] // (3 * (num_heads // tp))
    q, k, v = (hidden_states @ w_qkv.t()).view(b, s, 3, -1, head_dim).unbind(2)
    attn = _ring_attention(q, k, v, head_dim ** -0.5, cp_group, ring).to(hidden_states.dtype)
    out = attn.reshape(b, s, -1) @ w_o.t()
    if tp > 1:
        dist.all_reduce(out, op=dist.ReduceOp.SUM, group=tp_group)
    return out
