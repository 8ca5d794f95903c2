import torch
import torch.distributed as dist
import torch.nn.functional as F


def _block_sum(image, text, logit_scale, logit_bias, own):
    """fp32 sum over one block of logsigmoid(label * logits), each element in the input dtype (label -1 off the
    diagonal of the own block and everywhere in a foreign block)."""
    logits = logit_scale * image @ text.t() + logit_bias
    labels = -torch.ones_like(logits)
    if own:
        labels = labels + 2 * torch.eye(logits.shape[0], dtype=logits.dtype, device=logits.device)
    return F.logsigmoid(labels * logits).sum(dtype=torch.float32)


def solution(image_features: torch.Tensor, text_features: torch.Tensor, logit_scale: float = 10.0,
             logit_bias: float = -10.0) -> torch.Tensor:
    """SigLIP loss of this rank's images against every rank's texts, text blocks passed between neighbours.

    image_features, text_features: (B_l, D), L2-normalised rows. logits = logit_scale * image @ text^T + logit_bias
    (each op in the input dtype). loss = -(1/B_l) * [sum over the own block of logsigmoid(label * logits), label +1 on
    the diagonal, -1 elsewhere, + sum over every other rank's text block of logsigmoid(-logits)], accumulated in fp32.
    Returns a 0-dim fp32 tensor, this rank's loss (not averaged across ranks).
    """
    world, rank = dist.get_world_size(), dist.get_rank()
    b = image_features.shape[0]
    total = _block_sum(image_features, text_features, logit_scale, logit_bias, True)
    right, left = (rank + 1) % world, (rank - 1) % world
    to_right = to_left = text_features.contiguous()
    for _ in range((world - 1) // 2):  # each round: one block from each side, forwarding last round's blocks
        from_left, from_right = torch.empty_like(to_right), torch.empty_like(to_left)
        ops = [dist.P2POp(dist.isend, to_right, right), dist.P2POp(dist.irecv, from_left, left),
               dist.P2POp(dist.isend, to_left, left), dist.P2POp(dist.irecv, from_right, right)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        total = total + _block_sum(image_features, from_left, logit_scale, logit_bias, False)
        total = total + _block_sum(image_features, from_right, logit_scale, logit_bias, False)
        to_right, to_left = from_left, from_right
    if world % 2 == 0 and world > 1:  # the opposite rank's block, one more hop to the right
        received = torch.empty_like(to_right)
        ops = [dist.P2POp(dist.isend, to_right, right), dist.P2POp(dist.irecv, received, left)]
        for req in dist.batch_isend_irecv(ops):
            req.wait()
        total = total + _block_sum(image_features, received, logit_scale, logit_bias, False)
    return -total / b
