import torch
import torch.distributed as dist


@torch.no_grad()
def solution(A_local: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
    """A_local: (M, K/W), rank q's column block [q*K/W, (q+1)*K/W) of A (M, K). B: (K, N), this rank's own.

    Returns A @ B, shape (M, N). The shards are gathered transposed: A_local^T is a contiguous block of K/W
    rows of A^T.
    """
    world = dist.get_world_size()
    a_t_local = A_local.t().contiguous()
    a_t = torch.empty((world * a_t_local.shape[0], a_t_local.shape[1]), dtype=A_local.dtype, device=A_local.device)
    dist.all_gather_into_tensor(a_t, a_t_local)
    return torch.matmul(B.t(), a_t).t()
