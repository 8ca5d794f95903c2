import torch
import torch.distributed as dist


def _e4m3(v: torch.Tensor) -> torch.Tensor:
    """fp32 -> nearest float8_e4m3fn value (round to nearest even), back as fp32."""
    if hasattr(torch, "float8_e4m3fn"):
        return v.to(torch.float8_e4m3fn).to(torch.float32)
    # torch without fp8 (1.13): the spacing of the value's binade (2^-9 below 2^-6), exact scaling, round-half-even.
    a = v.abs()
    e = torch.floor(torch.log2(a.clamp_min(2.0 ** -126))).clamp_min(-6)
    step = torch.pow(2.0, e - 3)
    return (torch.round(a / step) * step).clamp_max(448.0) * torch.sign(v)


def _fp8_roundtrip(x: torch.Tensor, amax_history: torch.Tensor):
    """Delayed scaling: the local amax joins the shifted history; scale = max(history) / 448; quantise, dequantise."""
    amax = x.abs().max().float()
    history = torch.cat([amax_history[1:], amax.to(amax_history.dtype).reshape(1)])
    scale = history.max().float().clamp_min(1e-12) / 448.0
    recon = (_e4m3(x.float() / scale) * scale).to(x.dtype)
    return recon, history


def solution(flat_param_shard: torch.Tensor, amax_history: torch.Tensor):
    """FP8 (E4M3) parameter round trip with a delayed-scaling amax history, then all-gather.

    flat_param_shard: (P,), this rank's parameters; amax_history: (HIST,), oldest first. a = max|x| (local);
    history = amax_history[1:] + [a]; scale = max(history, 1e-12) / 448 in fp32;
    recon = float8_e4m3fn(x / scale) * scale, in the input dtype. Returns (the (W*P,) concatenation of every rank's
    recon in rank order, each quantised with its own scale, and this rank's history (HIST,)).
    """
    recon, history = _fp8_roundtrip(flat_param_shard, amax_history)
    full = torch.empty(recon.numel() * dist.get_world_size(), dtype=recon.dtype, device=recon.device)
    dist.all_gather_into_tensor(full, recon.contiguous())
    return full, history
