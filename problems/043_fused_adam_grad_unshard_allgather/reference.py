import torch
import torch.distributed as dist


def solution(grad_shard, master_shard, exp_avg, exp_avg_sq, step: int, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8):
    """One Adam step (no weight decay) on this rank's shard, then an all-gather of the updated parameters.

    All tensors are (P,). Works on copies: the inputs are not modified.
    Returns (params (W*P,) with shard q at [q*P, (q+1)*P), update (P,) = the step added to this rank's shard).
    """
    m = exp_avg.clone().mul_(beta1).add_(grad_shard, alpha=1 - beta1)
    v = exp_avg_sq.clone().mul_(beta2).addcmul_(grad_shard, grad_shard, value=1 - beta2)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    denom = (v / bias_correction2).sqrt() + eps
    update = (m / bias_correction1) / denom * (-lr)
    shard = master_shard + update
    params = shard.new_empty(dist.get_world_size() * shard.numel())
    dist.all_gather_into_tensor(params, shard.contiguous())
    return params, update
