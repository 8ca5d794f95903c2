import torch
import torch.distributed as dist


def _filtered_log_prob(rows: torch.Tensor, target: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """log_softmax at target of rows (n, V) filtered as vLLM's apply_top_k_top_p; float32 (n,)."""
    sorted_logits, order = rows.sort(dim=-1, descending=False)
    threshold = sorted_logits[:, -top_k].unsqueeze(-1)
    sorted_logits = sorted_logits.masked_fill(sorted_logits < threshold, float("-inf"))  # ties at the threshold kept
    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    drop = cumulative <= 1 - top_p
    drop[:, -1] = False                                                                  # the largest is always kept
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    filtered = torch.empty_like(rows).scatter_(-1, order, sorted_logits)
    return torch.log_softmax(filtered.float(), dim=-1).gather(-1, target.unsqueeze(-1)).squeeze(-1)


def solution(vocab_parallel_logits: torch.Tensor, target: torch.Tensor, top_k: int, chunk_size: int,
             top_p: float = 0.9, tp_group=None) -> torch.Tensor:
    """Log-probs of the targets under vLLM's top-k / top-p filter, vocab split across ranks, in token chunks.

    vocab_parallel_logits (B, S, V / W): this rank's vocab slice; target (B, S): token ids, the same on every rank.
    The B * S tokens (b-major) are processed in consecutive chunks of B * chunk_size tokens; within a chunk, rank r
    gathers the full rows of the chunk's r-th of W contiguous ranges (all-to-all, vocab in rank order), filters each
    row (top-k with ties, then top-p on the softmax in the logits' dtype), takes log_softmax of the filtered row in
    float32 at the target, and the chunk's values are all-gathered. Returns all tokens' values (B, S), float32.
    """
    world, rank = dist.get_world_size(tp_group), dist.get_rank(tp_group)
    batch, seq, local_vocab = vocab_parallel_logits.shape
    tokens = batch * seq
    flat = vocab_parallel_logits.reshape(tokens, local_vocab)
    flat_target = target.reshape(tokens)
    out = torch.empty(tokens, dtype=torch.float32, device=flat.device)

    for start in range(0, tokens, batch * chunk_size):
        chunk = flat[start:start + batch * chunk_size]
        per_rank = chunk.shape[0] // world
        received = [torch.empty(per_rank, local_vocab, dtype=flat.dtype, device=flat.device) for _ in range(world)]
        dist.all_to_all(received, list(chunk.split(per_rank)), group=tp_group)
        rows = torch.cat(received, dim=-1)
        mine = flat_target[start + rank * per_rank:start + (rank + 1) * per_rank]
        log_probs = _filtered_log_prob(rows, mine, top_k, top_p)
        dist.all_gather_into_tensor(out[start:start + chunk.shape[0]], log_probs, group=tp_group)
    return out.view(batch, seq)
