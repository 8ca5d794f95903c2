import torch
import torch.distributed as dist


def solution(H: torch.Tensor, error: torch.Tensor, weights: torch.Tensor, P: torch.Tensor,
             kalman_lambda: float = 0.98, kalman_nue: float = 0.9987, group=None):
    """One data-parallel Kalman-filter optimizer step over NB parameter blocks (fp64).

    H, weights (NB, BS, 1); P (NB, BS, BS) covariance blocks; error: 0-dim, this rank's own.
    A = 1 / sum over ranks and blocks of (lambda + H_i^T P_i H_i). Per block K_i = P_i H_i,
    w_i += A * error * K_i, P_i = (P_i - A * K_i K_i^T) / lambda.
    Returns (every rank's updated weights gathered, (W * NB, BS, 1) rank-major; this rank's new P (NB, BS, BS);
    nue * lambda + 1 - nue as a 0-dim tensor).
    """
    blocks = H.shape[0]
    denominator = torch.zeros(1, 1, dtype=H.dtype, device=H.device)
    for i in range(blocks):
        denominator = denominator + (kalman_lambda + H[i].t() @ P[i] @ H[i])
    dist.all_reduce(denominator, group=group)
    A = 1 / denominator

    new_weights, new_P = [], []
    for i in range(blocks):
        K = P[i] @ H[i]
        new_weights.append(weights[i] + A * error * K)
        new_P.append((1 / kalman_lambda) * (P[i] - A * K @ K.t()))
    local = torch.stack(new_weights)
    gathered = local.new_empty((dist.get_world_size(group) * blocks, *local.shape[1:]))
    dist.all_gather_into_tensor(gathered, local, group=group)
    next_lambda = torch.tensor(kalman_nue * kalman_lambda + 1 - kalman_nue, dtype=H.dtype, device=H.device)
    return gathered, torch.stack(new_P), next_lambda
