import torch
import torch.distributed as dist


def solution(local_pos_scores: torch.Tensor, local_neg_scores: torch.Tensor) -> torch.Tensor:
    """Rank of every positive score among its negatives, over all ranks.

    local_pos_scores: (P_r,), local_neg_scores: (P_r, Nn); P_r may differ across ranks. Returns ranks (P,) int64 for
    all P = sum P_r positives in rank order: 1 + the number of negatives whose sigmoid (in the input dtype) is
    strictly greater than the positive's. The same on every rank.
    """
    world, rank = dist.get_world_size(), dist.get_rank()
    rows = torch.cat([local_pos_scores.unsqueeze(1), local_neg_scores], dim=1)  # (P_r, 1 + Nn)

    sizes = torch.zeros(world, dtype=torch.int64, device=rows.device)
    sizes[rank] = rows.shape[0]
    dist.all_reduce(sizes)
    most = int(sizes.max())
    padded = torch.zeros(most, rows.shape[1], dtype=rows.dtype, device=rows.device)
    padded[:rows.shape[0]] = rows
    gathered = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(gathered, padded)
    scores = torch.cat([g[:int(n)] for g, n in zip(gathered, sizes)])  # (P, 1 + Nn)

    probs = torch.sigmoid(scores)
    return 1 + (probs[:, 1:] > probs[:, :1]).sum(dim=1)
