import torch
import torch.distributed as dist


@torch.no_grad()
def solution(X_hat: torch.Tensor, dY: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """LayerNorm parameter gradients over the tokens of all ranks.

    X_hat, dY: (M, N), different on every rank. Returns (d_gamma, d_beta), each (N,) and identical on every rank:
    d_gamma = sum over ranks of (dY * X_hat).sum(0), d_beta = sum over ranks of dY.sum(0).
    """
    d_beta = dY.sum(dim=0)
    d_gamma = (dY * X_hat).sum(dim=0)
    dist.all_reduce(d_beta, op=dist.ReduceOp.SUM)
    dist.all_reduce(d_gamma, op=dist.ReduceOp.SUM)
    return d_gamma, d_beta
