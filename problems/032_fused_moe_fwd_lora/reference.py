import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(hidden_states, gate_weight, gate_bias,
             gate_proj_weight, gate_proj_bias, up_proj_weight, up_proj_bias, down_proj_weight, down_proj_bias,
             lora_gate_A, lora_gate_B, lora_up_A, lora_up_B, lora_down_A, lora_down_B,
             num_experts: int, top_k: int, group=None):
    """Expert-parallel MoE forward with LoRA experts: router, top-k, all-to-all dispatch, SwiGLU MLP, combine.

    hidden_states (M, N) are this rank's tokens. Router (this rank's own): p = softmax(hidden @ gate_weight^T +
    gate_bias) over the E experts; each token takes its top_k experts with weights w = p (not renormalised).
    Rank q hosts experts [q*L, (q+1)*L), L = E/W; all of them apply rank q's MLP with LoRA adapters:
    g = gate(x) + B_g(A_g x), u = up(x) + B_u(A_u x), y = silu(g) * u, out = down(y) + B_d(A_d y)
    (gate, up, down: nn.Linear with bias; A x means x @ A^T, no bias, no alpha/r scaling). Token t is sent once per chosen expert to
    the expert's owner, computed there, and sent back; out[t] = sum_k w[t, k] * y[t, k].
    Returns out (M, N).
    """
    world = dist.get_world_size(group)
    local_experts = num_experts // world
    tokens, hidden = hidden_states.shape

    probs = torch.softmax(F.linear(hidden_states, gate_weight, gate_bias), dim=-1)
    weights, experts = torch.topk(probs, top_k, dim=-1)                      # (M, K), descending

    # Expert-major order, tokens ascending within an expert.
    flat_experts = experts.reshape(-1)
    order = torch.sort(flat_experts, stable=True).indices
    token_of_row = torch.arange(tokens, device=hidden_states.device).repeat_interleave(top_k)[order]
    rows = hidden_states.index_select(0, token_of_row)
    counts = torch.bincount(flat_experts, minlength=num_experts)             # rows per expert

    def expert_mlp(x):
        g = F.linear(x, gate_proj_weight, gate_proj_bias) + F.linear(F.linear(x, lora_gate_A), lora_gate_B)
        u = F.linear(x, up_proj_weight, up_proj_bias) + F.linear(F.linear(x, lora_up_A), lora_up_B)
        y = F.silu(g) * u
        return F.linear(y, down_proj_weight, down_proj_bias) + F.linear(F.linear(y, lora_down_A), lora_down_B)

    if world == 1:
        results = expert_mlp(rows)
    else:
        all_counts = torch.empty(world, num_experts, dtype=counts.dtype, device=counts.device)
        dist.all_gather_into_tensor(all_counts, counts, group=group)
        per_rank = all_counts.view(world, world, local_experts).sum(-1)      # [source, destination]
        rank = dist.get_rank(group)
        send = per_rank[rank].tolist()
        recv = per_rank[:, rank].tolist()
        received = rows.new_empty(sum(recv), hidden)
        dist.all_to_all_single(received, rows, recv, send, group=group)
        # Every local expert of this rank is the same MLP, so the rows need no regrouping by local expert.
        computed = expert_mlp(received)
        results = rows.new_empty(rows.shape)
        dist.all_to_all_single(results, computed, send, recv, group=group)

    weighted = weights.reshape(-1)[order].unsqueeze(1) * results
    out = torch.zeros_like(hidden_states)
    out.index_add_(0, token_of_row, weighted)
    return out
