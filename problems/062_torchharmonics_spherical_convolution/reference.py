import torch
import torch.distributed as dist

_groups = {}


def _azimuth_polar_groups(az: int, polar: int):
    """(azimuth group, polar group) of this rank for rank = p * az + a; created once, by every rank in order."""
    if (az, polar) not in _groups:
        rank = dist.get_rank()
        azimuth = [dist.new_group(list(range(p * az, (p + 1) * az))) for p in range(polar)]
        polar_groups = [dist.new_group(list(range(a, az * polar, az))) for a in range(az)]
        _groups[(az, polar)] = (azimuth[rank // az], polar_groups[rank % az])
    return _groups[(az, polar)]


def _all_to_all(chunks, group):
    recv = [torch.empty_like(chunks[0]) for _ in chunks]
    dist.all_to_all(recv, [c.contiguous() for c in chunks], group=group)
    return recv


def solution(x: torch.Tensor, psi_indices: torch.Tensor, psi_values: torch.Tensor, weight: torch.Tensor,
             bias: torch.Tensor) -> torch.Tensor:
    """Distributed DISCO convolution on the sphere, polar x azimuth decomposition (rank = p * az + a).

    x (B, C, nl, nw): latitude block p, longitude block a of the global field (nlon = az * nw longitudes).
    psi: this rank's sparse (KB, nlat, nl * nlon) tensor (COO indices and values); weight (C, C, KB), bias (C,).
    1. azimuth transpose: channel chunk a' goes to azimuth rank a' (all longitudes, C / az channels);
    2. Y[b, c, k, o, j] = sum_i sum_l psi[k, o, i * nlon + l] * x[b, c, i, (l + j) mod nlon];
    3. all-reduce Y over the polar group, keep output-latitude block p;
    4. inverse azimuth transpose: longitude chunk a' goes to azimuth rank a', channels stacked by source;
    5. out[b, o, y, z] = sum_{c, k} weight[o, c, k] * Y[b, c, k, y, z] + bias[o].
    Returns (B, C, nl, nw) fp32.
    """
    world, rank = dist.get_world_size(), dist.get_rank()
    az = 2 if world % 2 == 0 else 1
    polar = world // az
    azimuth_group, polar_group = _azimuth_polar_groups(az, polar)
    p = rank // az
    batch, channels, local_lat, local_lon = x.shape
    nlon, nlat, kernel_size = local_lon * az, local_lat * polar, weight.shape[2]

    if az > 1:
        x = torch.cat(_all_to_all(list(x.chunk(az, dim=1)), azimuth_group), dim=3)
    local_channels = x.shape[1]

    rows = psi_indices[0] * nlat + psi_indices[1]
    psi = torch.sparse_coo_tensor(torch.stack([rows, psi_indices[2]]), psi_values,
                                  (kernel_size * nlat, local_lat * nlon)).coalesce()
    # Row k * nlat + o of psi against x rolled by j along the longitudes gives Y[..., k, o, j].
    y = x.new_empty(nlon, kernel_size * nlat, batch * local_channels)
    shifted = x.reshape(batch * local_channels, local_lat, nlon)
    for j in range(nlon):
        y[j] = torch.sparse.mm(psi, shifted.reshape(batch * local_channels, -1).t().contiguous())
        shifted = torch.roll(shifted, -1, dims=2)
    y = y.reshape(nlon, kernel_size, nlat, batch, local_channels).permute(3, 4, 1, 2, 0).contiguous()

    if polar > 1:
        dist.all_reduce(y, group=polar_group)
    y = y[:, :, :, p * local_lat:(p + 1) * local_lat]

    if az > 1:
        y = torch.cat(_all_to_all(list(y.chunk(az, dim=4)), azimuth_group), dim=1)

    return torch.einsum("bckyz,ock->boyz", y, weight) + bias.view(1, -1, 1, 1)
