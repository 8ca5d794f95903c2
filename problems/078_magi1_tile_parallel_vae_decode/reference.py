import torch
import torch.distributed as dist
import torch.nn.functional as F


def _all_gather_tiles(tiles, owner, shapes, like, world, rank):
    """Every tile from its owner: each rank's own tiles (ascending index) flattened, padded and all-gathered (dtype and
    device of `like`)."""
    mine = [tiles[i].reshape(-1) for i in sorted(tiles)]
    sizes = [sum(int(torch.Size(shapes[i]).numel()) for i in range(len(shapes)) if owner[i] == q) for q in range(world)]
    buffer = like.new_zeros(max(sizes))
    if mine:
        buffer[:sizes[rank]] = torch.cat(mine)
    parts = [torch.empty_like(buffer) for _ in range(world)]
    dist.all_gather(parts, buffer)
    out, offsets = {}, [0] * world
    for i, shape in enumerate(shapes):
        q, n = owner[i], int(torch.Size(shape).numel())
        out[i] = parts[q][offsets[q]:offsets[q] + n].view(shape)
        offsets[q] += n
    return out


def _blend(prev, tile, dim, extent):
    """The first `extent` slices of `tile` along dim fade in from the last ones of `prev` (each op in the dtype)."""
    extent = min(prev.shape[dim], tile.shape[dim], extent)
    tile = tile.clone()
    for y in range(extent):
        a = prev.select(dim, prev.shape[dim] - extent + y)
        tile.select(dim, y).copy_(a * (1 - y / extent) + tile.select(dim, y) * (y / extent))
    return tile


def solution(z, tile_latent_min_length, tile_latent_min_size, tile_latent_stride, temporal_upsample, spatial_upsample):
    """Tile-parallel VAE decode (MAGI-1) with trilinear upsampling as the decoder.

    z: (1, C, T, H, W) this rank's own latent. Tiles of (tile_latent_min_length, tile_latent_min_size, ...) at
    strides (tile_latent_min_length, tile_latent_stride, tile_latent_stride), clipped at the edges, are sorted by
    size (descending, stable) and dealt out: position p belongs to rank p % world, which decodes it from its own z
    (trilinear upsampling in fp32, channels 0-2, cast to z's dtype). Owners blend their tiles with the decoded
    neighbours above and to the left, crop them and every rank stitches the whole video (1, 3, T tu, H su, W su).
    """
    world, rank = dist.get_world_size(), dist.get_rank()
    tt, ts, ss = tile_latent_min_length, tile_latent_min_size, tile_latent_stride
    tu, su = temporal_upsample, spatial_upsample
    _, _, T, H, W = z.shape
    grid = [(t, h, w) for t in range(0, T, tt) for h in range(0, H, ss) for w in range(0, W, ss)]
    latent = [(min(tt, T - t), min(ts, H - h), min(ts, W - w)) for t, h, w in grid]
    order = sorted(range(len(grid)), key=lambda i: -latent[i][0] * latent[i][1] * latent[i][2])  # stable
    owner = {i: p % world for p, i in enumerate(order)}
    shapes = [(1, 3, lt * tu, lh * su, lw * su) for lt, lh, lw in latent]

    decoded = {}
    for i, (t, h, w) in enumerate(grid):
        if owner[i] == rank:
            lt, lh, lw = latent[i]
            tile = z[:, :3, t:t + lt, h:h + lh, w:w + lw].float()
            decoded[i] = F.interpolate(tile, scale_factor=(tu, su, su), mode="trilinear", align_corners=False).to(z.dtype)
    decoded = _all_gather_tiles(decoded, owner, shapes, z, world, rank)

    nh, nw = len(range(0, H, ss)), len(range(0, W, ss))
    extent, limit = (ts - ss) * su, ss * su
    blended = {}
    for i in decoded:
        if owner[i] != rank:
            continue
        tile, h, w = decoded[i], (i // nw) % nh, i % nw
        if h > 0:
            tile = _blend(decoded[i - nw], tile, 3, extent)
        if w > 0:
            tile = _blend(decoded[i - 1], tile, 4, extent)
        blended[i] = tile[:, :, :, :limit, :limit].contiguous()
    cropped = [(1, 3, s[2], min(s[3], limit), min(s[4], limit)) for s in shapes]
    blended = _all_gather_tiles(blended, owner, cropped, z, world, rank)

    rows = [torch.cat([blended[(t * nh + h) * nw + w] for w in range(nw)], dim=4)
            for t in range(len(range(0, T, tt))) for h in range(nh)]
    frames = [torch.cat(rows[t * nh:(t + 1) * nh], dim=3) for t in range(len(range(0, T, tt)))]
    return torch.cat(frames, dim=2)
