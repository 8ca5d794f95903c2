import torch
import torch.distributed as dist


def _filter(rows: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """rows (n, V) filtered as vLLM's apply_top_k_top_p: -inf outside the kept set."""
    sorted_logits, order = rows.sort(dim=-1, descending=False)
    threshold = sorted_logits[:, -top_k].unsqueeze(-1)
    sorted_logits = sorted_logits.masked_fill(sorted_logits < threshold, float("-inf"))  # ties at the threshold kept
    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    drop = cumulative <= 1 - top_p
    drop[:, -1] = False                                                                  # the largest is always kept
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    return torch.empty_like(rows).scatter_(-1, order, sorted_logits)


def solution(vocab_parallel_logits: torch.Tensor, target: torch.Tensor, grad_output: torch.Tensor, top_k: int,
             chunk_size: int, top_p: float = 0.9, tp_group=None) -> torch.Tensor:
    """Gradient of the filtered target log-probs (problem 83's forward) w.r.t. the vocab-parallel logits.

    vocab_parallel_logits (B, S, V / W): this rank's vocab slice; target (B, S) and grad_output (B, S): the same on
    every rank. The filter's kept set is a constant mask. Per chunk of B * chunk_size tokens (b-major), rank r
    gathers the full rows of the chunk's r-th of W contiguous ranges (all-to-all), computes
    grad = g * kept * (onehot(target) - softmax(filtered logits)) in float32, and an all-to-all returns each rank's
    vocab slice. Returns (B, S, V / W) float32: the gradient for this rank's slice, all tokens.
    """
    world, rank = dist.get_world_size(tp_group), dist.get_rank(tp_group)
    batch, seq, local_vocab = vocab_parallel_logits.shape
    tokens = batch * seq
    flat = vocab_parallel_logits.reshape(tokens, local_vocab)
    flat_target, flat_grad = target.reshape(tokens), grad_output.reshape(tokens).float()
    out = torch.empty(tokens, local_vocab, dtype=torch.float32, device=flat.device)

    for start in range(0, tokens, batch * chunk_size):
        chunk = flat[start:start + batch * chunk_size]
        per_rank = chunk.shape[0] // world
        received = [torch.empty(per_rank, local_vocab, dtype=flat.dtype, device=flat.device) for _ in range(world)]
        dist.all_to_all(received, list(chunk.split(per_rank)), group=tp_group)
        rows = torch.cat(received, dim=-1)                                   # (per_rank, V)
        mine = slice(start + rank * per_rank, start + (rank + 1) * per_rank)

        filtered = _filter(rows, top_k, top_p)
        kept = torch.isfinite(filtered)
        probs = torch.softmax(filtered.float(), dim=-1)
        onehot = torch.zeros_like(probs).scatter_(-1, flat_target[mine].unsqueeze(-1), 1.0)
        grad = flat_grad[mine].unsqueeze(-1) * kept * (onehot - probs)

        pieces = [torch.empty(per_rank, local_vocab, dtype=grad.dtype, device=grad.device) for _ in range(world)]
        dist.all_to_all(pieces, [p.contiguous() for p in grad.split(local_vocab, dim=-1)], group=tp_group)
        out[start:start + chunk.shape[0]] = torch.cat(pieces)
    return out.view(batch, seq, local_vocab)
