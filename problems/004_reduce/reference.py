import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor, dst: int) -> torch.Tensor:
    """Rank `dst` returns the elementwise sum over ranks; other ranks return a copy of their own input.

    What dist.reduce leaves in a non-root buffer depends on the backend (NCCL leaves it untouched, gloo leaves
    partial sums), so the non-root result is the input itself, not the buffer."""
    out = tensor.clone()
    dist.reduce(out, dst=dst, op=dist.ReduceOp.SUM)
    return out if dist.get_rank() == dst else tensor.clone()
