#include "reference/reference.h"

#include <algorithm>
#include <numeric>

namespace problem_078 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

struct Tile {
  int64_t t, h, w, lt, lh, lw;  // latent origin and (clipped) extent
};

struct Tiling {
  int64_t nt, nh, nw, tu, su, extent, limit;
  std::vector<Tile> tiles;  // by index (t nh + h) nw + w
  std::vector<int> owner;
};

Tiling tiling(const RankContext& ctx, const at::Tensor& z) {
  const int64_t tt = ctx.scalar("tile_latent_min_length"), ts = ctx.scalar("tile_latent_min_size");
  const int64_t ss = ctx.scalar("tile_latent_stride");
  const int64_t T = z.size(2), H = z.size(3), W = z.size(4);
  Tiling g{(T + tt - 1) / tt,
           (H + ss - 1) / ss,
           (W + ss - 1) / ss,
           ctx.scalar("temporal_upsample"),
           ctx.scalar("spatial_upsample"),
           0,
           0,
           {},
           {}};
  g.extent = (ts - ss) * g.su, g.limit = ss * g.su;
  for (int64_t t = 0; t < T; t += tt)
    for (int64_t h = 0; h < H; h += ss)
      for (int64_t w = 0; w < W; w += ss)
        g.tiles.push_back({t, h, w, std::min(tt, T - t), std::min(ts, H - h), std::min(ts, W - w)});
  std::vector<int64_t> order(g.tiles.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  auto size = [&](int64_t i) { return g.tiles[i].lt * g.tiles[i].lh * g.tiles[i].lw; };
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return size(a) > size(b); });
  g.owner.resize(order.size());
  for (size_t p = 0; p < order.size(); ++p) g.owner[order[p]] = static_cast<int>(p % ctx.world);
  return g;
}

// Every tile from its owner: each rank's own tiles (ascending index) flattened, padded to the largest share and
// all-gathered (the values PKB's all_to_all of replicated buffers delivers). shapes[i] is tile i's shape.
std::vector<at::Tensor> gather_tiles(Communicator& comm, const Tiling& g, const std::vector<at::Tensor>& own,
                                     const std::vector<std::vector<int64_t>>& shapes, const at::TensorOptions& opts) {
  const int W = comm.size();
  auto numel = [](const std::vector<int64_t>& s) {
    return std::accumulate(s.begin(), s.end(), int64_t{1}, std::multiplies<>());
  };
  std::vector<int64_t> share(W, 0);
  for (size_t i = 0; i < shapes.size(); ++i) share[g.owner[i]] += numel(shapes[i]);
  at::Tensor buffer = at::zeros({*std::max_element(share.begin(), share.end())}, opts);
  int64_t at_ = 0;
  for (size_t i = 0; i < own.size(); ++i)
    if (own[i].defined()) {
      buffer.slice(0, at_, at_ + own[i].numel()).copy_(own[i].reshape(-1));
      at_ += own[i].numel();
    }
  at::Tensor all = at::empty({W, buffer.numel()}, opts);
  comm.all_gather(buffer, all);
  std::vector<int64_t> offset(W, 0);
  std::vector<at::Tensor> tiles;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const int q = g.owner[i];
    tiles.push_back(all[q].slice(0, offset[q], offset[q] + numel(shapes[i])).view(shapes[i]));
    offset[q] += numel(shapes[i]);
  }
  return tiles;
}

// The first `extent` slices of tile along dim fade in from prev's last ones; each product and sum in the dtype.
at::Tensor blend(const at::Tensor& prev, at::Tensor tile, int64_t dim, int64_t extent) {
  extent = std::min({prev.size(dim), tile.size(dim), extent});
  tile = tile.clone();
  for (int64_t y = 0; y < extent; ++y) {
    const double f = static_cast<double>(y) / extent;
    at::Tensor a = prev.select(dim, prev.size(dim) - extent + y);
    tile.select(dim, y).copy_(a * (1 - f) + tile.select(dim, y) * f);
  }
  return tile;
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor& z = in[0];
  const Tiling g = tiling(ctx, z);
  const size_t n = g.tiles.size();
  std::vector<std::vector<int64_t>> shapes, cropped;
  for (const Tile& k : g.tiles) {
    shapes.push_back({1, 3, k.lt * g.tu, k.lh * g.su, k.lw * g.su});
    cropped.push_back({1, 3, k.lt * g.tu, std::min(k.lh * g.su, g.limit), std::min(k.lw * g.su, g.limit)});
  }
  std::vector<at::Tensor> own(n);
  for (size_t i = 0; i < n; ++i) {
    if (g.owner[i] != ctx.rank) continue;
    const Tile& k = g.tiles[i];
    at::Tensor latent = z.slice(1, 0, 3).slice(2, k.t, k.t + k.lt).slice(3, k.h, k.h + k.lh).slice(4, k.w, k.w + k.lw);
    own[i] = at::upsample_trilinear3d(latent.to(at::kFloat), {shapes[i][2], shapes[i][3], shapes[i][4]}, false,
                                      static_cast<double>(g.tu), static_cast<double>(g.su), static_cast<double>(g.su))
                 .to(z.scalar_type());
  }
  std::vector<at::Tensor> decoded = gather_tiles(*ctx.comm, g, own, shapes, z.options());

  std::vector<at::Tensor> blended(n);
  for (size_t i = 0; i < n; ++i) {
    if (g.owner[i] != ctx.rank) continue;
    const int64_t h = (i / g.nw) % g.nh, w = i % g.nw;
    at::Tensor tile = decoded[i];
    if (h > 0) tile = blend(decoded[i - g.nw], tile, 3, g.extent);
    if (w > 0) tile = blend(decoded[i - 1], tile, 4, g.extent);
    blended[i] = tile.slice(3, 0, g.limit).slice(4, 0, g.limit).contiguous();
  }
  std::vector<at::Tensor> done = gather_tiles(*ctx.comm, g, blended, cropped, z.options());

  std::vector<at::Tensor> frames;
  for (int64_t t = 0; t < g.nt; ++t) {
    std::vector<at::Tensor> rows;
    for (int64_t h = 0; h < g.nh; ++h)
      rows.push_back(at::cat(
          std::vector<at::Tensor>(done.begin() + (t * g.nh + h) * g.nw, done.begin() + (t * g.nh + h + 1) * g.nw), 4));
    frames.push_back(at::cat(rows, 3));
  }
  return {at::cat(frames, 2)};
}

// 1-D linear upsampling by an integer factor as a matrix (out x in), align_corners = False: source coordinate
// (o + 0.5) / s - 0.5 clamped at 0, upper neighbour clamped to the last index.
at::Tensor upsample_matrix(int64_t in, int64_t s) {
  at::Tensor m = at::zeros({in * s, in}, at::kDouble);
  for (int64_t o = 0; o < in * s; ++o) {
    const double src = std::max((o + 0.5) / s - 0.5, 0.0);
    const int64_t i0 = static_cast<int64_t>(src), i1 = std::min(i0 + 1, in - 1);
    const double f = src - i0;
    m[o][i0] = m[o][i0].item<double>() + (1 - f);
    m[o][i1] = m[o][i1].item<double>() + f;
  }
  return m;
}

// Independent tiling and ownership, separable fp64 decoding (rounded to the dtype, where the semantics materialise
// the decoded tiles), fp64 blending from those, one rounding; the mosaic written into place tile by tile.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int64_t tt = ctx.scalar("tile_latent_min_length"), ts = ctx.scalar("tile_latent_min_size");
  const int64_t ss = ctx.scalar("tile_latent_stride"), tu = ctx.scalar("temporal_upsample"),
                su = ctx.scalar("spatial_upsample");
  const at::ScalarType dtype = in[0][0].scalar_type();
  const int64_t T = in[0][0].size(2), H = in[0][0].size(3), Wd = in[0][0].size(4);
  const int64_t nt = (T + tt - 1) / tt, nh = (H + ss - 1) / ss, nw = (Wd + ss - 1) / ss, E = (ts - ss) * su;
  auto len = [](int64_t total, int64_t start, int64_t size) { return std::min(size, total - start); };
  // ownership: by latent volume, descending, ties by index
  std::vector<std::pair<int64_t, int64_t>> by_size;  // (-volume, index)
  for (int64_t i = 0; i < nt * nh * nw; ++i) {
    const int64_t t = i / (nh * nw), h = (i / nw) % nh, w = i % nw;
    by_size.push_back({-len(T, t * tt, tt) * len(H, h * ss, ts) * len(Wd, w * ss, ts), i});
  }
  std::sort(by_size.begin(), by_size.end());
  std::vector<int> owner(by_size.size());
  for (size_t p = 0; p < by_size.size(); ++p) owner[by_size[p].second] = static_cast<int>(p % ctx.world);

  auto decode = [&](int64_t i) {  // (3, lt tu, lh su, lw su) in fp64, values rounded to the dtype
    const int64_t t = i / (nh * nw), h = (i / nw) % nh, w = i % nw;
    const int64_t lt = len(T, t * tt, tt), lh = len(H, h * ss, ts), lw = len(Wd, w * ss, ts);
    at::Tensor x = in[owner[i]][0][0]
                       .slice(0, 0, 3)
                       .slice(1, t * tt, t * tt + lt)
                       .slice(2, h * ss, h * ss + lh)
                       .slice(3, w * ss, w * ss + lw)
                       .to(at::kDouble);
    x = at::einsum("ot,cthw->cohw", {upsample_matrix(lt, tu), x});
    x = at::einsum("oh,cthw->ctow", {upsample_matrix(lh, su), x});
    x = at::einsum("ow,cthw->ctho", {upsample_matrix(lw, su), x});
    return x.to(dtype).to(at::kDouble);
  };
  at::Tensor video = at::empty({1, 3, T * tu, H * su, Wd * su}, at::kDouble);
  for (int64_t i = 0; i < nt * nh * nw; ++i) {
    const int64_t t = i / (nh * nw), h = (i / nw) % nh, w = i % nw;
    at::Tensor tile = decode(i);
    if (h > 0) {
      at::Tensor prev = decode(i - nw);
      const int64_t e = std::min({prev.size(2), tile.size(2), E});
      at::Tensor f = at::arange(e, at::kDouble).div(e).view({1, 1, e, 1});
      tile.slice(2, 0, e) = prev.slice(2, prev.size(2) - e) * (1 - f) + tile.slice(2, 0, e) * f;
    }
    if (w > 0) {
      at::Tensor prev = decode(i - 1);
      const int64_t e = std::min({prev.size(3), tile.size(3), E});
      at::Tensor f = at::arange(e, at::kDouble).div(e).view({1, 1, 1, e});
      tile.slice(3, 0, e) = prev.slice(3, prev.size(3) - e) * (1 - f) + tile.slice(3, 0, e) * f;
    }
    const int64_t rows = std::min(tile.size(2), ss * su), cols = std::min(tile.size(3), ss * su);
    video[0]
        .slice(1, t * tt * tu, t * tt * tu + tile.size(1))
        .slice(2, h * ss * su, h * ss * su + rows)
        .slice(3, w * ss * su, w * ss * su + cols)
        .copy_(tile.slice(2, 0, rows).slice(3, 0, cols));
  }
  return std::vector<Tensors>(ctx.world, Tensors{video.to(dtype)});
}

PKB_REGISTER_PROBLEM("magi1_tile_parallel_vae_decode", reference, oracle);

}  // namespace problem_078
