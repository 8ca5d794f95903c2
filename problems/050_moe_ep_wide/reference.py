import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(hidden_states, gate_weight, gate_bias, gate_proj_weight, gate_proj_bias, up_proj_weight, up_proj_bias,
             down_proj_weight, down_proj_bias, num_experts: int, top_k: int):
    """Expert-parallel MoE forward (two experts per rank).

    hidden_states: (M, N), this rank's tokens; gate_weight (E, N), gate_bias (E,): this rank's router. Rank p of the
    EP group hosts experts p*L .. p*L+L-1 (L = num_experts / group size), all computed by this rank's one SwiGLU MLP
    down(silu(gate(x)) * up(x)) (Linear weights (F, N), (F, N), (N, F) with biases). Router: p = softmax(linear(x))
    (fp32 inside, rounded), top_k of p, not renormalised. Each token row is sent to the owner of each chosen expert
    (expert-major, tokens ascending), processed there and sent back; out[t] = sum_k w_k * y_k, each weighted row
    rounded and added into zeros in choice order. Returns out (M, N).
    """
    group = None
    size = dist.get_world_size(group)
    local = num_experts // size
    x = hidden_states
    probs = torch.softmax(F.linear(x, gate_weight, gate_bias).float(), dim=-1).to(x.dtype)
    weights, chosen = probs.topk(top_k, dim=-1)

    flat = chosen.reshape(-1)
    order = torch.sort(flat, stable=True).indices
    send = x.index_select(0, order // top_k)
    per_rank = torch.bincount(flat, minlength=num_experts).view(size, local).sum(1)
    counts = torch.empty(size * size, dtype=per_rank.dtype, device=x.device)
    dist.all_gather_into_tensor(counts, per_rank, group=group)
    table = counts.view(size, size).tolist()  # host sync: the split sizes
    me = dist.get_rank(group)
    send_rows = table[me]
    recv_rows = [table[q][me] for q in range(size)]

    rows = torch.empty(sum(recv_rows), x.shape[1], dtype=x.dtype, device=x.device)
    dist.all_to_all_single(rows, send, recv_rows, send_rows, group=group)
    done = F.linear(F.silu(F.linear(rows, gate_proj_weight, gate_proj_bias)) * F.linear(rows, up_proj_weight, up_proj_bias),
                    down_proj_weight, down_proj_bias)
    back = torch.empty_like(send)
    dist.all_to_all_single(back, done, send_rows, recv_rows, group=group)

    y = torch.empty_like(back).index_copy_(0, order, back).view(x.shape[0], top_k, x.shape[1])
    out = torch.zeros_like(x)
    for k in range(top_k):
        out = out + weights[:, k:k + 1] * y[:, k]
    return out
