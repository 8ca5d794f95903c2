import torch
import torch.distributed as dist


def solution(x: torch.Tensor, norm: str = "ortho", group=None) -> torch.Tensor:
    """Distributed 2-D inverse real FFT of a half spectrum split by rows.

    x (B, C, H / W, Wd / 2 + 1, 2) fp32: this rank's rows of the half spectrum S (view_as_real), Wd even.
    1. Hermitian completion to width Wd: F[k, l] = conj(S[(H - k) mod H, Wd - l]) for l > Wd / 2 (zero-pad,
       conjugate-flip the own rows, all-gather along H, flip rows 1..H-1 of the tail, keep the own rows);
    2. inverse FFT along Wd;
    3. all-to-all: column chunk j (Wd / W columns) goes to rank j; pieces are stacked by rows in source order;
    4. inverse FFT along H, real part.
    Returns this rank's columns of irfft2(S, s=(H, Wd)), (B, C, H, Wd / W) fp32.
    """
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    half = torch.view_as_complex(x.contiguous())
    batch, channels, local_rows, half_width = half.shape
    height, width = local_rows * world, 2 * (half_width - 1)

    padded = torch.zeros(batch, channels, local_rows, width, dtype=half.dtype, device=half.device)
    padded[..., :half_width] = half
    padded[..., half_width:] = half[..., 1:width - half_width + 1].flip(-1).conj()
    gathered = torch.empty(world, batch, channels, local_rows, width, 2, dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(gathered, torch.view_as_real(padded), group=group)
    full = torch.view_as_complex(gathered).permute(1, 2, 0, 3, 4).reshape(batch, channels, height, width)
    full[:, :, 1:, half_width:] = full[:, :, 1:, half_width:].flip(-2).clone()  # row k <- row H - k
    mine = full[:, :, rank * local_rows:(rank + 1) * local_rows]

    rows = torch.fft.ifft(mine, n=width, dim=-1, norm=norm)
    send = [torch.view_as_real(chunk.contiguous()).contiguous() for chunk in rows.chunk(world, dim=-1)]
    recv = [torch.empty_like(send[0]) for _ in range(world)]
    dist.all_to_all(recv, send, group=group)
    columns = torch.cat([torch.view_as_complex(piece) for piece in recv], dim=2)
    return torch.fft.ifft(columns, n=height, dim=2, norm=norm).real.contiguous()
