import torch
import torch.distributed as dist


def _quat_to_rotmat(quats):
    w, x, y, z = (quats / quats.norm(dim=-1, keepdim=True)).unbind(-1)
    return torch.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], dim=-1).reshape(*quats.shape[:-1], 3, 3)


def _project(means, covars, viewmat, K, width, height, eps2d, near_plane, far_plane):
    """EWA projection of N Gaussians into one pinhole camera, fp32. Returns radii (N, 2) int32 and
    (means2d (N, 2), depths (N,), conics (N, 3))."""
    R, t = viewmat[:3, :3], viewmat[:3, 3]
    p = means @ R.t() + t
    cov_c = R @ covars @ R.t()
    fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    tx, ty, tz = p.unbind(-1)
    tan_fovx, tan_fovy = 0.5 * width / fx, 0.5 * height / fy
    lim_x_pos, lim_x_neg = (width - cx) / fx + 0.3 * tan_fovx, cx / fx + 0.3 * tan_fovx
    lim_y_pos, lim_y_neg = (height - cy) / fy + 0.3 * tan_fovy, cy / fy + 0.3 * tan_fovy
    tx_clamped = tz * torch.minimum(torch.maximum(tx / tz, -lim_x_neg), lim_x_pos)
    ty_clamped = tz * torch.minimum(torch.maximum(ty / tz, -lim_y_neg), lim_y_pos)
    zeros = torch.zeros_like(tz)
    J = torch.stack([fx / tz, zeros, -fx * tx_clamped / (tz * tz),
                     zeros, fy / tz, -fy * ty_clamped / (tz * tz)], dim=-1).reshape(-1, 2, 3)
    cov2d = J @ cov_c @ J.transpose(1, 2) + eps2d * torch.eye(2, dtype=means.dtype, device=means.device)
    means2d = torch.stack([fx * tx / tz + cx, fy * ty / tz + cy], dim=-1)

    a, b, c, d = cov2d[:, 0, 0], cov2d[:, 0, 1], cov2d[:, 1, 0], cov2d[:, 1, 1]
    det = (a * d - b * c).clamp(min=1e-10)
    conics = torch.stack([d / det, -(b + c) / (2 * det), a / det], dim=-1)
    radii = torch.ceil(3.33 * torch.sqrt(torch.stack([a, d], dim=-1)))
    valid = (tz > near_plane) & (tz < far_plane)
    valid &= (means2d[:, 0] + radii[:, 0] > 0) & (means2d[:, 0] - radii[:, 0] < width)
    valid &= (means2d[:, 1] + radii[:, 1] > 0) & (means2d[:, 1] - radii[:, 1] < height)
    radii = (radii * valid.unsqueeze(-1)).int()
    return radii, (means2d, tz, conics)


def solution(means, quats, scales, opacities, colors, viewmats, Ks, image_width: int, image_height: int,
             eps2d: float = 0.3, near_plane: float = 0.01, far_plane: float = 1e10, camera_model: str = "pinhole"):
    """Project this rank's Gaussians into every rank's camera and send each camera's visible Gaussians to its owner.

    means (G, 3), quats (G, 4) (w, x, y, z), scales (G, 3), opacities (G,), colors (G, 3); viewmats (1, 4, 4) and
    Ks (1, 3, 3): this rank's camera. Arithmetic is fp32; float outputs are returned in the inputs' dtype.
    Returns, for the Gaussians visible in this rank's camera (source rank order, then local index):
    (camera_ids, gaussian_ids (global), radii (K, 2), means2d (K, 2), depths, conics (K, 3), opacities, colors).
    """
    assert camera_model == "pinhole"
    world, rank = dist.get_world_size(), dist.get_rank()
    dtype, device = means.dtype, means.device
    count = torch.tensor([means.shape[0]], device=device)
    counts = [torch.empty_like(count) for _ in range(world)]
    dist.all_gather(counts, count)
    offset = int(sum(c.item() for c in counts[:rank]))
    camera = torch.cat([viewmats.reshape(-1), Ks.reshape(-1)]).float()
    cameras = [torch.empty_like(camera) for _ in range(world)]
    dist.all_gather(cameras, camera)

    mu, q, s = means.float(), quats.float(), scales.float()
    M = _quat_to_rotmat(q) * s.unsqueeze(-2)
    covars = M @ M.transpose(1, 2)
    floats, ints = [], []
    for cam in cameras:
        radii, (means2d, depths, conics) = _project(mu, covars, cam[:16].reshape(4, 4), cam[16:].reshape(3, 3),
                                                     image_width, image_height, eps2d, near_plane, far_plane)
        visible = (radii > 0).all(dim=-1)
        ids = torch.arange(means.shape[0], device=device)[visible] + offset
        floats.append(torch.cat([means2d, depths.unsqueeze(-1), conics, opacities.float().unsqueeze(-1),
                                 colors.float()], dim=-1)[visible].to(dtype))
        ints.append(torch.cat([radii[visible], torch.zeros_like(ids).unsqueeze(-1).int(), ids.unsqueeze(-1).int()], dim=-1))

    send_counts = torch.tensor([f.shape[0] for f in floats], device=device)
    recv_counts = torch.empty_like(send_counts)
    dist.all_to_all_single(recv_counts, send_counts)
    sizes = recv_counts.tolist()
    got_floats = [floats[0].new_empty((n, 10)) for n in sizes]
    got_ints = [ints[0].new_empty((n, 4)) for n in sizes]
    dist.all_to_all(got_floats, [f.contiguous() for f in floats])
    dist.all_to_all(got_ints, [i.contiguous() for i in ints])
    f, i = torch.cat(got_floats), torch.cat(got_ints)
    return (i[:, 2].contiguous(), i[:, 3].contiguous(), i[:, :2].contiguous(), f[:, 0:2].contiguous(),
            f[:, 2].contiguous(), f[:, 3:6].contiguous(), f[:, 6].contiguous(), f[:, 7:10].contiguous())
