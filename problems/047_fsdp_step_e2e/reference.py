import torch
import torch.distributed as dist


def solution(X_local, y_local, flat_param_shard, hidden: int, d_in: int, d_out: int, exp_avg_shard, exp_avg_sq_shard,
             step: int, lr: float = 1e-3, beta1: float = 0.9, beta2: float = 0.999, eps: float = 1e-8,
             weight_decay: float = 0.01):
    """One FSDP FULL_SHARD training step of a 2-layer ReLU MLP with a sharded AdamW (decoupled decay).

    flat_param_shard: (P,), elements [r*P, (r+1)*P) of the flat [W1 (hidden, d_in), b1 (hidden,), W2 (d_out, hidden),
    b2 (d_out,)]; exp_avg_shard / exp_avg_sq_shard: (P,), its Adam moments. X_local (chunk, d_in), y_local
    (chunk, d_out): this rank's batch. The inputs are not modified.
    Returns (param_shard, exp_avg, exp_avg_sq, update), each (P,): the new shard and moments, and the applied change
    -lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * theta0), rounded once.
    """
    world = dist.get_world_size()
    flat = torch.empty(flat_param_shard.numel() * world, dtype=flat_param_shard.dtype, device=flat_param_shard.device)
    dist.all_gather_into_tensor(flat, flat_param_shard.contiguous())
    sizes = [hidden * d_in, hidden, d_out * hidden, d_out]
    shapes = [(hidden, d_in), (hidden,), (d_out, hidden), (d_out,)]
    params = [p.view(s).clone().requires_grad_(True) for p, s in zip(torch.split(flat, sizes), shapes)]
    W1, b1, W2, b2 = params

    h = torch.relu(torch.nn.functional.linear(X_local, W1, b1))
    out = torch.nn.functional.linear(h, W2, b2)
    loss = (out - y_local).pow(2).mean()
    grads = torch.autograd.grad(loss, params)

    flat_grad = torch.cat([g.reshape(-1) for g in grads])
    g = torch.empty_like(flat_param_shard)
    dist.reduce_scatter_tensor(g, flat_grad.contiguous(), op=dist.ReduceOp.SUM)
    g = g / world

    theta0 = flat_param_shard
    m = exp_avg_shard.mul(beta1).add(g, alpha=1 - beta1)
    v = exp_avg_sq_shard.mul(beta2).addcmul(g, g, value=1 - beta2)
    bc1 = 1 - beta1 ** step
    bc2 = 1 - beta2 ** step
    denom = (v / bc2).sqrt().add(eps)
    u = (m / bc1) / denom
    theta = theta0.add(u, alpha=-lr)
    theta = theta.add(theta0, alpha=-lr * weight_decay)
    update = (u.float() * -lr - (lr * weight_decay) * theta0.float()).to(theta0.dtype)
    return theta, m, v, update
