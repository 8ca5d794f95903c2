import torch
import torch.distributed as dist


def solution(local_tensor: torch.Tensor, input_split_sizes: torch.Tensor, output_split_sizes: torch.Tensor,
             group=None) -> torch.Tensor:
    """All-to-all with explicit split sizes along dim 0.

    Rows of `local_tensor` (M, N) go out in consecutive chunks: input_split_sizes[q] rows to rank q, in rank order.
    Returns the chunks received from ranks 0..W-1 (output_split_sizes[q] rows from rank q), concatenated in rank order.
    """
    send = input_split_sizes.tolist()
    recv = output_split_sizes.tolist()
    out = local_tensor.new_empty((sum(recv), local_tensor.shape[1]))
    dist.all_to_all_single(out, local_tensor.contiguous(), recv, send, group=group)
    return out
