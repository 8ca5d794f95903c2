import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(gate_logits: torch.Tensor, num_experts: int, top_k: int, attention_mask=None) -> torch.Tensor:
    """Switch/Mixtral auxiliary load-balancing loss, averaged over ranks.

    gate_logits: (M, E) router logits of this rank's tokens. p = softmax(gate_logits); every token's top_k experts
    are chosen from p. local = E * sum_{k,e} f[k, e] * mean_t p[t, e], with f[k, e] the fraction of tokens whose
    k-th choice is e. Returns the 0-dim float32 mean of `local` over all ranks (the same on every rank).
    attention_mask must be None (PKB never passes one).
    """
    assert attention_mask is None
    routing_weights = torch.softmax(gate_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)             # (M, K, E)
    tokens_per_expert = expert_mask.float().mean(dim=0)                # (K, E) float32
    router_prob_per_expert = routing_weights.mean(dim=0)               # (E,) in the logits' dtype
    loss = (tokens_per_expert * router_prob_per_expert.unsqueeze(0)).sum() * num_experts
    dist.all_reduce(loss, op=dist.ReduceOp.SUM)
    return loss / dist.get_world_size()
