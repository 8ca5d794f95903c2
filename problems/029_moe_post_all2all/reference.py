import torch
import torch.distributed as dist


def solution(expert_outputs: torch.Tensor, routing_weights: torch.Tensor, selected_experts: torch.Tensor,
             num_experts: int, input_splits: torch.Tensor, output_splits: torch.Tensor,
             num_global_tokens_per_local_expert: torch.Tensor, routing_map: torch.Tensor,
             local_input_permutation_mapping: torch.Tensor, org_hidden_states_shape: torch.Tensor, group=None):
    """Expert-parallel token combine (the inverse of the dispatch in problem 28).

    expert_outputs (K*M, N): rows of this rank's local experts in (local expert j, source rank s) chunk order, chunk
    sizes num_global_tokens_per_local_expert[s, j]. They are regrouped into (s, j) order and sent back with
    all_to_all_single (output_splits[q] rows to rank q, input_splits[q] rows from q). The returned rows follow
    local_input_permutation_mapping (expert-major, tokens ascending): row p belongs to expert e_p and token perm[p].
    Each row is scaled by the router weight of (perm[p], e_p) (routing_weights[t, k] is the weight of expert
    selected_experts[t, k]) and added into out[perm[p]]. Returns out with shape org_hidden_states_shape.
    """
    ep_size, local_experts = num_global_tokens_per_local_expert.shape
    chunks = expert_outputs.split(num_global_tokens_per_local_expert.t().flatten().tolist())  # (j, s) order
    regrouped = torch.cat([chunks[j * ep_size + s] for s in range(ep_size) for j in range(local_experts)])

    send, recv = output_splits.tolist(), input_splits.tolist()
    returned = regrouped.new_empty((sum(recv), expert_outputs.shape[1]))
    dist.all_to_all_single(returned, regrouped.contiguous(), recv, send, group=group)

    num_tokens = org_hidden_states_shape[0].item()
    weights = routing_weights.new_zeros((num_tokens, num_experts)).scatter(1, selected_experts, routing_weights)
    permuted_weights = weights.t().contiguous().masked_select(routing_map)  # expert-major, tokens ascending
    weighted = returned * permuted_weights.unsqueeze(1)
    out = returned.new_zeros(tuple(org_hidden_states_shape.tolist()))
    out.index_add_(0, local_input_permutation_mapping, weighted)
    return out
