import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(input: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Row-parallel 3-D convolution: each rank convolves its input channels, the partials are summed over ranks.

    input: (1, Cin/W, T, H, W_sp), this rank's input channels; weight: (Cout, Cin/W, 3, 3, 3), the matching slice;
    bias: (Cout,), the same on every rank. Returns bias + sum over ranks of conv3d(input, weight) (stride 1, no
    padding), (1, Cout, T-2, H-2, W_sp-2): partials in fp32, summed in fp32, one rounding to the input dtype.
    """
    partial = F.conv3d(input.float(), weight.float())
    dist.all_reduce(partial)
    return (partial + bias.float().view(1, -1, 1, 1, 1)).to(input.dtype)
