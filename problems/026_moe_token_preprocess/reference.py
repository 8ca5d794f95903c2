import torch
import torch.distributed as dist


def solution(expert_mask: torch.Tensor, num_experts: int, group=None):
    """Split sizes for the expert-parallel dispatch all-to-all.

    expert_mask: (E, K, M) float32 one-hot; mask[e, k, t] = 1 when slot k of token t picked expert e.
    Rank q owns experts [q*E/W, (q+1)*E/W). Returns, on the CPU:
      input_splits (W,) int64: assignments this rank sends to each rank's experts;
      output_splits (W,) int64: assignments each rank sends to this rank's experts;
      num_global_tokens_per_local_expert (W, E/W) float32: [q, j] = assignments of rank q to local expert j;
      num_global_sum_tokens_per_local_expert (E/W,) float32: its sum over source ranks.
    """
    ep_size = dist.get_world_size(group)
    rank = dist.get_rank(group)
    local_experts = num_experts // ep_size
    counts = expert_mask.sum(dim=(1, 2))  # (E,) assignments per expert on this rank
    input_splits = counts.reshape(ep_size, local_experts).sum(dim=1)
    gathered = torch.empty(ep_size * num_experts, dtype=counts.dtype, device=counts.device)
    dist.all_gather_into_tensor(gathered, counts.contiguous(), group=group)
    per_local = gathered.view(ep_size, num_experts)[:, rank * local_experts:(rank + 1) * local_experts]
    output_splits = per_local.sum(dim=1)
    return (input_splits.to(torch.int64).cpu(), output_splits.to(torch.int64).cpu(),
            per_local.cpu(), per_local.sum(dim=0).cpu())
