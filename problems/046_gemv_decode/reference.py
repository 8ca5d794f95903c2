import torch
import torch.distributed as dist


def solution(hidden_states: torch.Tensor, weight_shard: torch.Tensor, bias_shard: torch.Tensor) -> torch.Tensor:
    """Vocab-parallel LM head with gathered output.

    hidden_states: (n_tok, H), the same on every rank; weight_shard: (V/W, H) and bias_shard: (V/W,), this rank's
    vocab rows. local = hidden_states @ weight_shard.T, then + bias_shard (two separate ops, each rounded). Returns
    the (n_tok, V) logits on every rank, rank q's local block at columns [q*V/W, (q+1)*V/W).
    """
    local = torch.matmul(hidden_states, weight_shard.t())
    local = local + bias_shard
    parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, local.contiguous())
    return torch.cat(parts, dim=-1)
