import torch
import torch.distributed as dist


def solution(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor` is (W, M, N). Slice d goes to rank d; output slice q on rank r is slice r of rank q's input."""
    out = torch.empty_like(tensor)
    dist.all_to_all_single(out, tensor.contiguous())
    return out
