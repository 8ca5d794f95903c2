import torch
import torch.distributed as dist


def solution(hidden_states: torch.Tensor, expert_mask: torch.Tensor, num_experts: int, input_splits: torch.Tensor,
             output_splits: torch.Tensor, num_global_tokens_per_local_expert: torch.Tensor, group=None):
    """Expert-parallel token dispatch.

    hidden_states (M, N); expert_mask (E, K, M) float one-hot, mask[e, k, t] = 1 when slot k of token t picked
    expert e (a token's K experts are distinct). Rank q owns experts [q*L, (q+1)*L), L = E/W.
      1. routing_map = expert_mask summed over slots, (E, M).
      2. perm = token ids in expert-major order, ascending within an expert, (K*M,); rows = hidden_states[perm].
      3. all_to_all_single: input_splits[q] rows go to rank q; output_splits[q] rows come from rank q.
      4. The received rows form W*L chunks in (source s, local expert j) order with sizes
         num_global_tokens_per_local_expert[s, j]; re-emit them in (j, s) order.
    Returns (regrouped rows (K*M, N), routing_map (E, M), perm (K*M,) int64, tensor([M, N])).
    """
    routing_map = expert_mask.sum(dim=1)
    num_tokens = routing_map.shape[1]
    token_ids = torch.arange(num_tokens, device=hidden_states.device).unsqueeze(0).expand(num_experts, -1)
    perm = token_ids.masked_select(routing_map.bool())
    permuted = hidden_states.index_select(0, perm)

    send, recv = input_splits.tolist(), output_splits.tolist()
    received = permuted.new_empty((sum(recv), hidden_states.shape[1]))
    dist.all_to_all_single(received, permuted, recv, send, group=group)

    ep_size, local_experts = num_global_tokens_per_local_expert.shape
    chunks = received.split(num_global_tokens_per_local_expert.flatten().tolist())  # (s, j) order
    regrouped = torch.cat([chunks[s * local_experts + j] for j in range(local_experts) for s in range(ep_size)])
    return regrouped, routing_map, perm, torch.tensor(hidden_states.shape, dtype=torch.int64)
