import torch
import torch.distributed as dist


def solution(teacher_output: torch.Tensor, n_masked_patches_tensor: torch.Tensor, n_iterations: int,
             teacher_temp: float = 0.07, group=None) -> torch.Tensor:
    """Sinkhorn-Knopp centering of teacher logits over all ranks' samples (DINOv2 / iBOT), in float32.

    teacher_output (B, K): this rank's samples' logits over K prototypes. n_masked_patches_tensor (1,): this rank's
    sample count, all-reduced into the global batch size. Q = exp(teacher_output / teacher_temp)^T (K, B), normalised
    by its global sum; then n_iterations times: each prototype row divided by its sum over all ranks' samples and by
    K, each sample column divided by its own sum and by the global batch size. Returns Q^T * batch size, (B, K).
    """
    q = torch.exp(teacher_output.float() / teacher_temp).t()
    num_prototypes = q.shape[0]
    batch = n_masked_patches_tensor.float()
    dist.all_reduce(batch, group=group)

    total = q.sum()
    dist.all_reduce(total, group=group)
    q = q / total

    for _ in range(n_iterations):
        row_sums = q.sum(dim=1, keepdim=True)
        dist.all_reduce(row_sums, group=group)
        q = q / row_sums / num_prototypes
        q = q / q.sum(dim=0, keepdim=True) / batch

    q = q * batch
    return q.t().contiguous()
