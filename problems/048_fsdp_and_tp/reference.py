import torch
import torch.distributed as dist
import torch.nn.functional as F

_groups = {}


def _tp_fsdp_groups(n_tp: int, n_fsdp: int):
    """(tp_group, fsdp_group) for rank = fsdp_rank * n_tp + tp_rank; created once, by every rank in the same order."""
    if (n_tp, n_fsdp) not in _groups:
        tp = [dist.new_group(list(range(j * n_tp, (j + 1) * n_tp))) for j in range(n_fsdp)]
        fsdp = [dist.new_group(list(range(i, n_tp * n_fsdp, n_tp))) for i in range(n_tp)]
        rank = dist.get_rank()
        _groups[(n_tp, n_fsdp)] = (tp[rank // n_tp], fsdp[rank % n_tp])
    return _groups[(n_tp, n_fsdp)]


def solution(x_local, W1_shard, W2_shard, W3_shard, n_tp: int, n_fsdp: int):
    """2-D FSDP x TP SwiGLU FFN forward (no autograd).

    Rank r = fsdp_rank * n_tp + tp_rank holds block (fsdp_rank, tp_rank) of W1 and W2 (D, D_ff), block
    (tp_rank, fsdp_rank) of W3 (D_ff, D), and its FSDP index's rows x_local (B_f, D). The FSDP group all-gathers the
    weight blocks (W1/W2 stacked by rows, W3 by columns); y_p = (silu(x W1_t) * (x W2_t)) W3_t, each op in the input
    dtype; y = SUM of y_p over the TP group. Returns y (B_f, D).
    """
    tp_group, fsdp_group = _tp_fsdp_groups(n_tp, n_fsdp)

    def gather(shard, dim):
        parts = [torch.empty_like(shard) for _ in range(n_fsdp)]
        dist.all_gather(parts, shard.contiguous(), group=fsdp_group)
        return torch.cat(parts, dim=dim)

    W1_t, W2_t, W3_t = gather(W1_shard, 0), gather(W2_shard, 0), gather(W3_shard, 1)
    x1 = x_local @ W1_t
    x2 = x_local @ W2_t
    z = F.silu(x1) * x2
    y = z @ W3_t
    if n_tp > 1:
        dist.all_reduce(y, op=dist.ReduceOp.SUM, group=tp_group)
    return y
