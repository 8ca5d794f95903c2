#include "reference/reference.h"

#include <algorithm>
#include <tuple>

namespace problem_062 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// Equal-split all-to-all of `chunks` (one per member, same shape) in a group; returns the received chunks.
std::vector<at::Tensor> all_to_all(Communicator& group, const std::vector<at::Tensor>& chunks) {
  at::Tensor send = at::stack(chunks).contiguous();
  at::Tensor recv = at::empty_like(send);
  group.all_to_all(send, recv);
  return recv.unbind(0);
}

// Y[b, c, k, o, j] = sum over nonzeros (k, o, i nlon + l) of v * x[b, c, i, (l + j) mod nlon]: the rolled input
// rows of a batch of nonzeros gathered at once and added into their (k, o) rows.
at::Tensor contract(const at::Tensor& x, const at::Tensor& indices, const at::Tensor& values, int64_t kernel_size,
                    int64_t nlat) {
  const int64_t B = x.size(0), C = x.size(1), nl = x.size(2), nlon = x.size(3);
  at::Tensor flat = x.reshape({B, C, nl * nlon});
  at::Tensor y = at::zeros({B, C, kernel_size * nlat, nlon}, x.options());
  at::Tensor shift = at::arange(nlon, indices.options());
  const int64_t nnz = values.size(0), step = 256;
  for (int64_t begin = 0; begin < nnz; begin += step) {
    const int64_t end = std::min(nnz, begin + step);
    at::Tensor k = indices[0].slice(0, begin, end), o = indices[1].slice(0, begin, end),
               column = indices[2].slice(0, begin, end);
    at::Tensor lat = column.div(nlon, "floor"), lon = column.remainder(nlon);
    at::Tensor source = lat.unsqueeze(1) * nlon + (lon.unsqueeze(1) + shift).remainder(nlon);  // (n, nlon)
    at::Tensor rows = flat.index_select(2, source.reshape(-1)).view({B, C, end - begin, nlon});
    y.index_add_(2, k * nlat + o, rows * values.slice(0, begin, end).view({1, 1, -1, 1}));
  }
  return y.view({B, C, kernel_size, nlat, nlon});
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int W = ctx.world, az = W % 2 == 0 ? 2 : 1, P = W / az, p = ctx.rank / az;
  const at::Tensor &weight = in[3], &bias = in[4];
  at::Tensor x = in[0];
  const int64_t nl = x.size(2), nlat = nl * P, kernel_size = weight.size(2);
  if (az > 1) x = at::cat(all_to_all(ctx.group("azimuth"), x.chunk(az, 1)), 3);  // C / az channels, all longitudes

  at::Tensor y = contract(x, in[1], in[2], kernel_size, nlat);
  if (P > 1) ctx.group("polar").all_reduce(y);
  y = y.slice(3, p * nl, (p + 1) * nl);
  if (az > 1) y = at::cat(all_to_all(ctx.group("azimuth"), y.chunk(az, 4)), 1);  // all channels, nw longitudes
  return {at::einsum("bckyz,ock->boyz", {y, weight}) + bias.view({1, -1, 1, 1})};
}

// fp64, one process: the global field from every rank's block, Y from every rank's psi applied to its polar
// block's rows and its channel chunk, then each rank's block with its own weight and bias.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world, az = W % 2 == 0 ? 2 : 1, P = W / az;
  const int64_t B = in[0][0].size(0), C = in[0][0].size(1), nl = in[0][0].size(2), nw = in[0][0].size(3);
  const int64_t nlat = nl * P, nlon = nw * az, kernel_size = in[0][3].size(2), Cc = C / az;
  at::Tensor X = at::empty({B, C, nlat, nlon}, at::kDouble);
  for (int q = 0; q < W; ++q)
    X.slice(2, (q / az) * nl, (q / az + 1) * nl).slice(3, (q % az) * nw, (q % az + 1) * nw).copy_(in[q][0]);
  at::Tensor Y = at::zeros({B, C, kernel_size, nlat, nlon}, at::kDouble);
  for (int q = 0; q < W; ++q) {
    const int pq = q / az, aq = q % az;
    auto idx = in[q][1].accessor<int64_t, 2>();
    auto val = in[q][2].accessor<float, 1>();
    for (int64_t n = 0; n < in[q][2].size(0); ++n) {
      const int64_t k = idx[0][n], o = idx[1][n], i = idx[2][n] / nlon, l = idx[2][n] % nlon;
      // x[b, c, i, (l + j) mod nlon] for j = 0..nlon-1 is row pq nl + i of X rolled left by l.
      at::Tensor row = X.slice(1, aq * Cc, (aq + 1) * Cc).select(2, pq * nl + i).roll({-l}, {2});
      Y.slice(1, aq * Cc, (aq + 1) * Cc).select(2, k).select(2, o).add_(row, static_cast<double>(val[n]));
    }
  }
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) {
    const int p = r / az, a = r % az;
    at::Tensor y = Y.slice(3, p * nl, (p + 1) * nl).slice(4, a * nw, (a + 1) * nw);
    at::Tensor o =
        at::einsum("bckyz,ock->boyz", {y, in[r][3].to(at::kDouble)}) + in[r][4].to(at::kDouble).view({1, -1, 1, 1});
    out.push_back({o.to(at::kFloat)});
  }
  return out;
}

// PKB's psi structure, coalesced: for k < KB, o < nlat, e < 4 the column (o mod nl) nlon + ((o + e (k + 1)) mod nlon),
// sorted by (k, o, column). The same on every rank.
Tensors prepare(const OracleContext& ctx, int, Tensors raw) {
  const int W = ctx.world, az = W % 2 == 0 ? 2 : 1, P = W / az;
  const int64_t nl = raw[0].size(2), nlon = raw[0].size(3) * az, nlat = nl * P, kernel_size = raw[3].size(2);
  std::vector<std::tuple<int64_t, int64_t, int64_t>> entries;
  for (int64_t k = 0; k < kernel_size; ++k)
    for (int64_t o = 0; o < nlat; ++o)
      for (int64_t e = 0; e < 4; ++e) entries.emplace_back(k, o, (o % nl) * nlon + (o + e * (k + 1)) % nlon);
  std::sort(entries.begin(), entries.end());
  at::Tensor idx = at::empty({3, static_cast<int64_t>(entries.size())}, at::kLong);
  auto a = idx.accessor<int64_t, 2>();
  for (size_t n = 0; n < entries.size(); ++n) std::tie(a[0][n], a[1][n], a[2][n]) = entries[n];
  raw[1] = idx;
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("torchharmonics_spherical_convolution", reference, oracle, prepare);

}  // namespace problem_062
