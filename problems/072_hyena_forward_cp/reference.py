import torch
import torch.distributed as dist


def _seq_to_channels(x, world, rank):
    """(1, C, 2 LC) zig-zag shard -> (C/W, L): this rank's channels over the global sequence in natural order."""
    chunks = [c.contiguous() for c in x[0].chunk(world, dim=0)]
    received = [torch.empty_like(c) for c in chunks]
    dist.all_to_all(received, chunks)
    lc = x.shape[-1] // 2
    order = [None] * (2 * world)
    for s, piece in enumerate(received):  # source s holds global chunks s and 2W-1-s
        order[s], order[2 * world - 1 - s] = piece[:, :lc], piece[:, lc:]
    return torch.cat(order, dim=1)


def _channels_to_seq(y, world):
    """(C/W, L) natural order -> (C, 2 LC): every channel at this rank's zig-zag chunks."""
    chunks = y.chunk(2 * world, dim=1)
    pieces = [torch.cat([chunks[d], chunks[2 * world - 1 - d]], dim=1).contiguous() for d in range(world)]
    received = [torch.empty_like(p) for p in pieces]
    dist.all_to_all(received, pieces)
    return torch.cat(received, dim=0)


def solution(x1_seq, x2_seq, v_seq, h, conv_bias):
    """Hyena operator with zig-zag context parallelism.

    x1_seq, x2_seq, v_seq: (1, C, 2 LC), global chunks r and 2W-1-r; h: (C, HL) long filter; conv_bias: (C,).
    Channels are split over ranks for the FFT convolution: z = x2 * v, y = causal FFT conv of z with h (fp32, FFT
    length 2L for the global length L) + z * bias, out = x1 * y, then back to the zig-zag sequence split.
    Returns (1, 2 LC, C).
    """
    world, rank = dist.get_world_size(), dist.get_rank()
    x1, x2, v = (_seq_to_channels(t, world, rank) for t in (x1_seq, x2_seq, v_seq))
    channels = slice(rank * x1.shape[0], (rank + 1) * x1.shape[0])
    z = x2 * v
    n = 2 * z.shape[-1]
    spectrum = torch.fft.rfft(z.float(), n=n) * torch.fft.rfft(h[channels].float(), n=n)
    y = torch.fft.irfft(spectrum, n=n)[:, :z.shape[-1]] + z.float() * conv_bias[channels].float().unsqueeze(-1)
    out = x1 * y.to(x1.dtype)
    return _channels_to_seq(out, world).t().unsqueeze(0)
