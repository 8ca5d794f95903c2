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


def solution(vocab_parallel_logits: torch.Tensor, target: torch.Tensor, top_k: int, top_p: float = 0.9,
             tp_group=None) -> torch.Tensor:
    """Log-probs of the targets under vLLM's top-k / top-p filter, with the vocab split across ranks.

    vocab_parallel_logits (B, S, V / W): this rank's vocab slice; target (B, S): token ids, the same on every rank.
    The B * S tokens (b-major) are split into W contiguous ranges; rank r gathers the full rows of range r (all-to-all,
    vocab in rank order), filters each row (top-k with ties, then top-p on the softmax in the logits' dtype) and
    takes log_softmax of the filtered row in float32 at the target. Returns all tokens' values (B, S), float32, on
    every rank.
    """
    world, rank = dist.get_world_size(tp_group), dist.get_rank(tp_group)
    batch, seq, local_vocab = vocab_parallel_logits.shape
    tokens = batch * seq
    per_rank = tokens // world
    flat = vocab_parallel_logits.reshape(tokens, local_vocab)

    received = [torch.empty(per_rank, local_vocab, dtype=flat.dtype, device=flat.device) for _ in range(world)]
    dist.all_to_all(received, list(flat.split(per_rank)), group=tp_group)
    rows = torch.cat(received, dim=-1)                                       # (tokens / W, V)
    mine = target.reshape(tokens)[rank * per_rank:(rank + 1) * per_rank]

    log_probs = _filtered_log_prob(rows, mine, top_k, top_p)
    gathered = torch.empty(tokens, dtype=log_probs.dtype, device=log_probs.device)
    dist.all_gather_into_tensor(gathered, log_probs, group=tp_group)
    return gathered.view(batch, seq)
