import torch
import torch.distributed as dist
import torch.nn.functional as F

_groups = {}


def _cp_tp_groups(world):
    """With W >= 4 even: TP pairs {2c, 2c+1} and CP groups {t, t+2, ...} (Megatron tp-cp order); else one CP group of
    all ranks and no TP. Created once, in the same order on every rank. Returns (cp_group, cp_rank, tp_group or None)."""
    if world not in _groups:
        rank = dist.get_rank()
        if world >= 4 and world % 2 == 0:
            tp_groups = [dist.new_group([2 * c, 2 * c + 1]) for c in range(world // 2)]
            cp_groups = [dist.new_group(list(range(t, world, 2))) for t in range(2)]
            _groups[world] = (cp_groups[rank % 2], rank // 2, tp_groups[rank // 2])
        else:
            _groups[world] = (None, rank, None)
    return _groups[world]


def _kda(q, k, v, g, beta, a_log, dt_bias):
    """Kimi Delta Attention, fp32. q, k, v, g: (T, H, D); beta: (T, H); a_log: (H,); dt_bias: (H, D). Returns (T, H, D)."""
    q = F.normalize(q.float(), dim=-1, eps=1e-12) * q.shape[-1] ** -0.5
    k = F.normalize(k.float(), dim=-1, eps=1e-12)
    v, beta = v.float(), torch.sigmoid(beta.float())
    alpha = torch.exp(-5 * torch.sigmoid(a_log.float().exp().unsqueeze(-1) * (g.float() + dt_bias.float())))  # (T, H, D)
    state = q.new_zeros(q.shape[1], q.shape[2], v.shape[2])  # (H, DK, DV)
    out = []
    for t in range(q.shape[0]):
        state = state * alpha[t].unsqueeze(-1)
        u = (v[t] - torch.einsum("hk,hkv->hv", k[t], state)) * beta[t].unsqueeze(-1)
        state = state + k[t].unsqueeze(-1) * u.unsqueeze(1)
        out.append(torch.einsum("hk,hkv->hv", q[t], state))
    return torch.stack(out)


def _gather_sequence(x, group):
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size(group))]
    dist.all_gather(parts, x.contiguous(), group=group)
    return torch.cat(parts, dim=1)


def solution(q, k, v, g, beta, a_log, dt_bias):
    """KDA under context parallelism (sequence all-gather) x tensor parallelism (output sum).

    q, k, v, g: (1, L, H, D), beta: (1, L, H) for this rank's positions [cp_rank L, (cp_rank+1) L); a_log (H,) and
    dt_bias (H * D,) the same on every rank. The CP group gathers the sequence, every rank runs KDA (fp32) over it
    for all heads and casts to the input dtype; with TP the two partners' outputs are summed. Returns this rank's
    positions (1, L, H, D).
    """
    cp_group, cp_rank, tp_group = _cp_tp_groups(dist.get_world_size())
    q, k, v, g, beta = (_gather_sequence(x, cp_group)[0] for x in (q, k, v, g, beta))
    out = _kda(q, k, v, g, beta, a_log, dt_bias.view(a_log.shape[0], -1)).to(v.dtype).unsqueeze(0)
    if tp_group is not None:
        dist.all_reduce(out, group=tp_group)
    L = out.shape[1] // dist.get_world_size(cp_group)
    return out[:, cp_rank * L:(cp_rank + 1) * L]
