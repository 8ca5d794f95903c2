import torch
import torch.distributed as dist

_groups = {}


def _ep_groups(ep_size: int):
    """(ep_fsdp_group, ep_group) for rank = f * ep_size + e; (WORLD, None) when ep_size does not split the world.

    Created once and cached: every rank must create every group, in the same order.
    """
    world = dist.get_world_size()
    if (world, ep_size) not in _groups:
        if ep_size > 1 and world % ep_size == 0:
            ep_group = _my_group([list(range(f * ep_size, (f + 1) * ep_size)) for f in range(world // ep_size)])
            ep_fsdp_group = _my_group([list(range(e, world, ep_size)) for e in range(ep_size)])
            _groups[(world, ep_size)] = (ep_fsdp_group, ep_group)
        else:
            _groups[(world, ep_size)] = (dist.group.WORLD, None)
    return _groups[(world, ep_size)]


def _my_group(rank_lists):
    """The group among rank_lists that holds this rank. Every rank creates every group, in the same order (what
    new_subgroups_by_enumeration does, which torch 1.13 refuses to run without CUDA)."""
    mine = None
    for ranks in rank_lists:
        group = dist.new_group(ranks)
        if dist.get_rank() in ranks:
            mine = group
    return mine


def _norm_pow(g, p):
    return torch.linalg.vector_norm(g.float(), p).pow(p)


def solution(non_ep_grad: torch.Tensor, ep_grad: torch.Tensor, max_norm: int, norm_type: int, ep_size: int):
    """Expert-parallel-aware global gradient-norm clipping.

    The expert gradient is first divided by ep_size (if ep_size > 1). Non-expert norms are summed over the world
    (the FSDP group); expert norms over the EP-FSDP group and then the EP group, which together is also every rank.
    total_norm = (sum ||non_ep||_p^p + sum ||ep / ep_size||_p^p)^(1/p), p = norm_type, fp32 norms. If
    total_norm > max_norm both gradients are scaled by max_norm / total_norm (fp32, rounded once to their dtype).
    The inputs are not modified. Returns (total_norm (0-dim fp32), non_ep_grad_clipped, ep_grad_clipped).
    """
    ep_fsdp_group, ep_group = _ep_groups(ep_size)
    ep = ep_grad / ep_size if ep_size > 1 else ep_grad

    non_ep_total = _norm_pow(non_ep_grad, norm_type)
    dist.all_reduce(non_ep_total, op=dist.ReduceOp.SUM)
    ep_total = _norm_pow(ep, norm_type)
    dist.all_reduce(ep_total, op=dist.ReduceOp.SUM, group=ep_fsdp_group)
    if ep_group is not None:
        dist.all_reduce(ep_total, op=dist.ReduceOp.SUM, group=ep_group)
    total_norm = (non_ep_total + ep_total).pow(1.0 / norm_type)

    coef = (max_norm / total_norm).clamp(max=1.0)
    clip = lambda g: (g.float() * coef).to(g.dtype)
    return total_norm, clip(non_ep_grad), clip(ep)
