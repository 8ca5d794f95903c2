import torch
import torch.distributed as dist

QUINTIC = [(4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
           (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012)]


def solution(x: torch.Tensor, steps: int, coefficient_type: str = "quintic", partition_dim: int = 1,
             group=None) -> torch.Tensor:
    """Muon's quintic Newton-Schulz orthogonalisation of a matrix split by columns across ranks, in float32.

    x (R, C): this rank's column block of the global X (R, W * C). X is divided by its global Frobenius norm
    (at least 1e-7); then for each step, with that step's coefficients (a, b, c): G = X @ X^T summed over ranks,
    X = a * X + (b * G + c * G @ G) @ X on the local block. Returns the local block in x's dtype.
    """
    assert coefficient_type == "quintic" and partition_dim == 1
    X = x.float()
    norm_sq = (X * X).sum()
    dist.all_reduce(norm_sq, group=group)
    X = X / norm_sq.sqrt().clamp(min=1e-7)
    for a, b, c in QUINTIC[:steps]:
        gram = X @ X.t()
        dist.all_reduce(gram, group=group)
        X = a * X + (b * gram + c * gram @ gram) @ X
    return X.to(x.dtype)
