import torch
import torch.distributed as dist


def solution(low_res_masks_local: torch.Tensor, obj_scores_local: torch.Tensor, num_obj_per_gpu: torch.Tensor,
             last_occluded: torch.Tensor, iou_threshold: float = 0.7, reverse: bool = False, group=None):
    """Gathers every rank's object masks and suppresses overlapping objects that were occluded more recently (SAM 3).

    low_res_masks_local (n_r, H, W) and obj_scores_local (n_r,): this rank's objects; num_obj_per_gpu (world,): every
    rank's object count; last_occluded (T,): the frame each object was last occluded (-1: never), T = sum of counts.
    Masks and scores are gathered in rank order as float32. For every pair whose binary masks (> 0) have
    IoU >= iou_threshold, the object with the larger last_occluded (smaller if reverse) is suppressed, provided the
    other's last_occluded > -1. Returns (masks, scores, to_suppress): the gathered masks with every suppressed
    object's mask set to -10, the gathered scores, and the bool flags, identical on all ranks.
    """
    world = dist.get_world_size(group)
    counts = num_obj_per_gpu.tolist()
    most = max(counts)

    def gather(local):
        padded = local.new_zeros((most,) + tuple(local.shape[1:]))
        padded[:local.shape[0]] = local
        parts = [torch.empty_like(padded) for _ in range(world)]
        dist.all_gather(parts, padded, group=group)
        return torch.cat([p[:n] for p, n in zip(parts, counts)])

    masks = gather(low_res_masks_local.float())
    scores = gather(obj_scores_local.float())

    binary = (masks > 0).flatten(1).float()
    inter = binary @ binary.t()
    area = binary.sum(1)
    iou = inter / (area[:, None] + area[None, :] - inter).clamp(min=1)
    n = masks.shape[0]
    overlapping = (iou >= iou_threshold) & ~torch.eye(n, dtype=torch.bool, device=masks.device)
    later = last_occluded[:, None] < last_occluded[None, :] if reverse else last_occluded[:, None] > last_occluded[None, :]
    to_suppress = (overlapping & later & (last_occluded[None, :] > -1)).any(dim=1)
    masks = masks.masked_fill(to_suppress[:, None, None], -10.0)
    return masks, scores, to_suppress
