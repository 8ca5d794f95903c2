import torch
import torch.distributed as dist


def solution(X_local, y_local, W1, b1, W2, b2,
             exp_avg_W1, exp_avg_b1, exp_avg_W2, exp_avg_b2,
             exp_avg_sq_W1, exp_avg_sq_b1, exp_avg_sq_W2, exp_avg_sq_b2,
             step: int, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
    """One data-parallel training step of a 2-layer ReLU MLP: DDP gradient averaging, then Adam (no weight decay).

    Rank 0's parameters and optimizer state are broadcast (flattened [W1, b1, W2, b2], row-major) and used by every
    rank; the inputs are not modified. Each rank computes the gradient of mean((h @ W2^T + b2 - y_local)^2),
    h = relu(X_local @ W1^T + b1), on its own rows; the flattened gradients are summed over ranks and divided by W.
    Returns (W1, b1, W2, b2 updated, the 4 exp_avg, the 4 exp_avg_sq, update): update is the flat Adam step
    -lr * m_hat / (sqrt(v_hat) + eps) added to the flat parameters. The same on every rank.
    """
    params = [W1, b1, W2, b2]
    shapes = [p.shape for p in params]
    sizes = [p.numel() for p in params]

    def flat(tensors):
        buf = torch.cat([t.reshape(-1) for t in tensors])  # a new buffer: the inputs stay untouched
        dist.broadcast(buf, src=0)
        return buf

    def unflat(buf):
        return [part.view(shape) for part, shape in zip(buf.split(sizes), shapes)]

    p_flat = flat(params)
    m = flat([exp_avg_W1, exp_avg_b1, exp_avg_W2, exp_avg_b2])
    v = flat([exp_avg_sq_W1, exp_avg_sq_b1, exp_avg_sq_W2, exp_avg_sq_b2])
    w1, c1, w2, c2 = unflat(p_flat)

    # Forward and backward (what autograd computes for F.linear, relu and mse_loss, written out).
    h = torch.relu(torch.nn.functional.linear(X_local, w1, c1))
    out = torch.nn.functional.linear(h, w2, c2)
    diff = out - y_local
    dout = diff * (2.0 / diff.numel())
    dh = (dout @ w2).masked_fill(h <= 0, 0)
    grads = [dh.t() @ X_local, dh.sum(0), dout.t() @ h, dout.sum(0)]

    g = torch.cat([t.reshape(-1) for t in grads])
    dist.all_reduce(g, op=dist.ReduceOp.SUM)
    g = g / dist.get_world_size()

    m.mul_(beta1).add_(g, alpha=1 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    denom = (v / (1 - beta2 ** step)).sqrt() + eps
    update = (m / (1 - beta1 ** step)) / denom * (-lr)
    p_flat = p_flat + update
    return (*unflat(p_flat), *unflat(m), *unflat(v), update)
