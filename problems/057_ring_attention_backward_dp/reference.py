import torch
import torch.distributed as dist

_groups = {}


def _cp_dp_groups(dp: int, cp: int):
    """Rank r = dp_rank * cp + cp_rank: CP rings are contiguous blocks, DP pairs {c, c + cp}; created once."""
    if (dp, cp) not in _groups:
        rings = [[d * cp + c for c in range(cp)] for d in range(dp)]
        cp_groups = [dist.new_group(ring) for ring in rings]
        dp_groups = [dist.new_group([d * cp + c for d in range(dp)]) for c in range(cp)]
        r = dist.get_rank()
        _groups[(dp, cp)] = (cp_groups[r // cp], dp_groups[r % cp], rings[r // cp])
    return _groups[(dp, cp)]


def solution(dout, q, k, v, out, softmax_lse):
    """Ring-attention backward (non-causal, ring-flash-attention style) followed by data-parallel averaging.

    dp = min(2, W), cp = W / dp, rank r = dp_rank * cp + cp_rank. dout, q, k, v, out: (B, S, H, D); softmax_lse:
    (B, H, S) fp32. out and softmax_lse come from the rank's LOCAL keys only and are used as given. In fp32, for CP
    position c and every block j of the ring: P = exp(scale * q_c k_j^T - lse_c); dS = P * (dout_c v_j^T - rowsum(dout_c *
    out_c)); dq_c += scale dS k_j; dk_j += scale dS^T q_c; dv_j += P^T dout_c. K/V travel forward around the ring and the
    dK/dV accumulators (fp32) travel with them, reaching their owners after C steps. The three gradients are cast back,
    SUM-all-reduced over the DP pair and divided by dp. Returns (dq, dk, dv), each (B, S, H, D).
    """
    world = dist.get_world_size()
    dp = min(2, world)
    cp = world // dp
    cp_group, dp_group, ring = _cp_dp_groups(dp, cp)
    size, c = len(ring), ring.index(dist.get_rank())
    scale = q.shape[-1] ** -0.5
    do32, q32, o32 = dout.float(), q.float(), out.float()
    lse = softmax_lse.unsqueeze(-1)  # (B, H, S, 1)
    dvec = torch.einsum("bshd,bshd->bhs", do32, o32).unsqueeze(-1)

    def exchange(tensors, send_to, recv_from):
        received = [torch.empty_like(t) for t in tensors]
        ops = [dist.P2POp(dist.isend, t, send_to, cp_group) for t in tensors]
        ops += [dist.P2POp(dist.irecv, t, recv_from, cp_group) for t in received]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        return received

    nxt, prv = ring[(c + 1) % size], ring[(c - 1) % size]
    k_cur, v_cur = k.contiguous(), v.contiguous()
    dq = torch.zeros_like(q32)
    dk_acc, dv_acc = torch.zeros_like(q32), torch.zeros_like(q32)  # accumulators for the block held now (rank c - step)
    for step in range(size):
        p = torch.exp(torch.einsum("bshd,bthd->bhst", q32, k_cur.float()) * scale - lse)
        ds = p * (torch.einsum("bshd,bthd->bhst", do32, v_cur.float()) - dvec)
        dq = dq + torch.einsum("bhst,bthd->bshd", ds, k_cur.float()) * scale
        dk_acc = dk_acc + torch.einsum("bhst,bshd->bthd", ds, q32) * scale
        dv_acc = dv_acc + torch.einsum("bhst,bshd->bthd", p, do32)
        if size > 1:  # pass the block on with its accumulators; after C steps they are back at their owner
            if step + 1 < size:
                k_cur, v_cur = exchange([k_cur, v_cur], nxt, prv)
            dk_acc, dv_acc = exchange([dk_acc, dv_acc], nxt, prv)

    grads = []
    for g in (dq, dk_acc, dv_acc):
        g = g.to(q.dtype)
        dist.all_reduce(g, op=dist.ReduceOp.SUM, group=dp_group)
        grads.append(g / dp)
    return tuple(grads)
