import torch
import torch.distributed as dist


def solution(grad_fc1_1_lora_A: torch.Tensor, grad_fc1_2_lora_A: torch.Tensor, grad_fc2_lora_B: torch.Tensor,
             group=None):
    """Sums each LoRA gradient over all ranks of `group` (WORLD when None), in place, without averaging.

    Shapes (R, N), (R, N), (N, R). Returns the three summed tensors; every rank returns the same values.
    """
    for grad in (grad_fc1_1_lora_A, grad_fc1_2_lora_A, grad_fc2_lora_B):
        dist.all_reduce(grad, op=dist.ReduceOp.SUM, group=group)
    return grad_fc1_1_lora_A, grad_fc1_2_lora_A, grad_fc2_lora_B
