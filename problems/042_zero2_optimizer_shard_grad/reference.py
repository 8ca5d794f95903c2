import torch
import torch.distributed as dist


def solution(X_local, y_local, W1, b1, W2, b2, exp_avg_part, exp_avg_sq_part,
             step: int, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
    """ZeRO stage 2 training step of a 2-layer ReLU MLP: gradient reduce-scatter, Adam on this rank's partition.

    Rank 0's parameters are broadcast (flattened [W1, b1, W2, b2], row-major, P_tot elements); every rank takes the
    gradient of mean((h @ W2^T + b2 - y_local)^2), h = relu(X_local @ W1^T + b1), on its own rows. The flat
    gradients are reduce-scattered (sum), so rank r keeps only partition r, then divided by W. Rank r owns partition r, elements [r*P, (r+1)*P) with
    P = P_tot / W (partitions cross parameter boundaries), and its Adam state (exp_avg_part, exp_avg_sq_part) for
    it: it updates its partition (on copies of the state), and the updated partitions are all-gathered.
    Returns (W1, b1, W2, b2 updated (same on every rank), exp_avg_part, exp_avg_sq_part, update_part), the last
    three this rank's partition; update_part is the Adam step -lr * m_hat / (sqrt(v_hat) + eps) it added.
    """
    params = [W1, b1, W2, b2]
    shapes = [p.shape for p in params]
    sizes = [p.numel() for p in params]
    world, rank = dist.get_world_size(), dist.get_rank()

    p_flat = torch.cat([p.reshape(-1) for p in params])
    dist.broadcast(p_flat, src=0)
    w1, c1, w2, c2 = [part.view(shape) for part, shape in zip(p_flat.split(sizes), shapes)]

    h = torch.relu(torch.nn.functional.linear(X_local, w1, c1))
    out = torch.nn.functional.linear(h, w2, c2)
    diff = out - y_local
    dout = diff * (2.0 / diff.numel())
    dh = (dout @ w2).masked_fill(h <= 0, 0)
    g = torch.cat([t.reshape(-1) for t in [dh.t() @ X_local, dh.sum(0), dout.t() @ h, dout.sum(0)]])
    part = p_flat.numel() // world
    g_part = g.new_empty(part)
    dist.reduce_scatter_tensor(g_part, g, op=dist.ReduceOp.SUM)
    g_part = g_part / world
    m = exp_avg_part.clone().mul_(beta1).add_(g_part, alpha=1 - beta1)
    v = exp_avg_sq_part.clone().mul_(beta2).addcmul_(g_part, g_part, value=1 - beta2)
    denom = (v / (1 - beta2 ** step)).sqrt() + eps
    update = (m / (1 - beta1 ** step)) / denom * (-lr)
    new_part = p_flat[rank * part:(rank + 1) * part] + update
    dist.all_gather_into_tensor(p_flat, new_part.contiguous())
    return (*[t.view(s) for t, s in zip(p_flat.split(sizes), shapes)], m, v, update)
