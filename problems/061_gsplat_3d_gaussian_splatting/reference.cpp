#include "reference/reference.h"

#include <array>
#include <cmath>

#include "core/error.h"

namespace problem_061 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

constexpr double kEps2d = 0.3, kNear = 0.01, kFar = 1e10;

// ---- reference: fp32 tensor ops, as reference.py ----

at::Tensor quat_to_rotmat(const at::Tensor& quats) {
  at::Tensor q = quats / quats.norm(2, {-1}, true);
  at::Tensor w = q.select(1, 0), x = q.select(1, 1), y = q.select(1, 2), z = q.select(1, 3);
  return at::stack({1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y), 2 * (x * y + w * z),
                    1 - 2 * (x * x + z * z), 2 * (y * z - w * x), 2 * (x * z - w * y), 2 * (y * z + w * x),
                    1 - 2 * (x * x + y * y)},
                   -1)
      .view({-1, 3, 3});
}

// One camera (16 viewmat + 9 K values, fp32): radii (N, 2) int64 and the 6 projected values
// [u, v, depth, conic_a, conic_b, conic_c] (N, 6) fp32.
std::pair<at::Tensor, at::Tensor> project(const at::Tensor& mu, const at::Tensor& covars, const at::Tensor& cam,
                                          double width, double height) {
  at::Tensor view = cam.slice(0, 0, 16).view({4, 4}), K = cam.slice(0, 16, 25).view({3, 3});
  at::Tensor R = view.slice(0, 0, 3).slice(1, 0, 3), t = view.slice(0, 0, 3).select(1, 3);
  at::Tensor p = at::matmul(mu, R.t()) + t;
  at::Tensor cov_c = at::matmul(at::matmul(R, covars), R.t());
  at::Tensor fx = K[0][0], fy = K[1][1], cx = K[0][2], cy = K[1][2];
  at::Tensor tx = p.select(1, 0), ty = p.select(1, 1), tz = p.select(1, 2);
  at::Tensor tan_fovx = 0.5 * width / fx, tan_fovy = 0.5 * height / fy;
  at::Tensor lim_x_pos = (width - cx) / fx + 0.3 * tan_fovx, lim_x_neg = cx / fx + 0.3 * tan_fovx;
  at::Tensor lim_y_pos = (height - cy) / fy + 0.3 * tan_fovy, lim_y_neg = cy / fy + 0.3 * tan_fovy;
  at::Tensor txc = tz * at::minimum(at::maximum(tx / tz, -lim_x_neg), lim_x_pos);
  at::Tensor tyc = tz * at::minimum(at::maximum(ty / tz, -lim_y_neg), lim_y_pos);
  at::Tensor zeros = at::zeros_like(tz);
  at::Tensor J =
      at::stack({fx / tz, zeros, -fx * txc / (tz * tz), zeros, fy / tz, -fy * tyc / (tz * tz)}, -1).view({-1, 2, 3});
  at::Tensor cov = at::matmul(at::matmul(J, cov_c), J.transpose(1, 2)) + kEps2d * at::eye(2, mu.options());
  at::Tensor u = fx * tx / tz + cx, v = fy * ty / tz + cy;
  at::Tensor a = cov.select(1, 0).select(1, 0), b = cov.select(1, 0).select(1, 1);
  at::Tensor c = cov.select(1, 1).select(1, 0), d = cov.select(1, 1).select(1, 1);
  at::Tensor det = (a * d - b * c).clamp_min(1e-10);
  at::Tensor radii = at::ceil(3.33 * at::sqrt(at::stack({a, d}, -1)));
  at::Tensor valid = tz.gt(kNear) & tz.lt(kFar) & (u + radii.select(1, 0)).gt(0) & (u - radii.select(1, 0)).lt(width) &
                     (v + radii.select(1, 1)).gt(0) & (v - radii.select(1, 1)).lt(height);
  radii = (radii * valid.unsqueeze(-1)).to(at::kLong);
  return {radii, at::stack({u, v, tz, d / det, -(b + c) / (2 * det), a / det}, -1)};
}

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const int W = ctx.world;
  const auto dtype = in[0].scalar_type();
  const at::TensorOptions f32 = in[0].options().dtype(at::kFloat), i64 = in[0].options().dtype(at::kLong);
  at::Tensor count = at::full({1}, in[0].size(0), i64), counts = at::empty({W}, i64);
  ctx.comm->all_gather(count, counts);
  const int64_t offset = counts.slice(0, 0, ctx.rank).sum().item<int64_t>();
  at::Tensor camera = at::cat({in[5].reshape(-1), in[6].reshape(-1)}).to(at::kFloat), cameras = at::empty({W, 25}, f32);
  ctx.comm->all_gather(camera, cameras);

  at::Tensor mu = in[0].to(at::kFloat), M = quat_to_rotmat(in[1].to(at::kFloat)) * in[2].to(at::kFloat).unsqueeze(-2);
  at::Tensor covars = at::matmul(M, M.transpose(1, 2));
  const double width = ctx.scalar("image_width"), height = ctx.scalar("image_height");
  std::vector<at::Tensor> floats, ints;
  std::vector<int64_t> send(W);
  for (int c = 0; c < W; ++c) {
    auto [radii, proj] = project(mu, covars, cameras[c], width, height);
    at::Tensor visible = radii.gt(0).all(1);
    at::Tensor ids = at::arange(mu.size(0), i64).masked_select(visible) + offset;
    at::Tensor payload = at::cat({proj, in[3].to(at::kFloat).unsqueeze(-1), in[4].to(at::kFloat)}, -1);
    floats.push_back(payload.index_select(0, visible.nonzero().squeeze(1)).to(dtype));
    ints.push_back(at::cat(
        {radii.index_select(0, visible.nonzero().squeeze(1)), at::zeros_like(ids).unsqueeze(-1), ids.unsqueeze(-1)},
        -1));
    send[c] = ids.size(0);
  }
  at::Tensor send_counts = at::tensor(send, at::kLong).to(ctx.device), recv_counts = at::empty_like(send_counts);
  ctx.comm->all_to_all(send_counts, recv_counts);
  at::Tensor rc = recv_counts.cpu();
  std::vector<int64_t> recv(rc.data_ptr<int64_t>(), rc.data_ptr<int64_t>() + W);
  int64_t total = 0;
  for (int64_t n : recv) total += n;
  at::Tensor f = at::empty({total, 10}, in[0].options()), i = at::empty({total, 4}, i64);
  ctx.comm->all_to_all(at::cat(floats).contiguous(), f, send, recv);
  ctx.comm->all_to_all(at::cat(ints).contiguous(), i, send, recv);
  i = i.to(at::kInt);
  return {i.select(1, 2).contiguous(),   i.select(1, 3).contiguous(),   i.slice(1, 0, 2).contiguous(),
          f.slice(1, 0, 2).contiguous(), f.select(1, 2).contiguous(),   f.slice(1, 3, 6).contiguous(),
          f.select(1, 6).contiguous(),   f.slice(1, 7, 10).contiguous()};
}

// ---- oracle and prepare: the projection of one Gaussian in one camera, fp64 scalars ----

struct Projected {
  double u, v, depth, conic[3], pre_radius[2];  // pre_radius: 3.33 sqrt(cov'), before ceil
  bool visible;
};

// g: mean (3), quaternion (4, w x y z), scale (3); cam: viewmat (16, row-major) then K (9).
Projected project_one(const double* mean, const double* quat, const double* scale, const double* cam, double width,
                      double height) {
  double n = std::sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
  double w = quat[0] / n, x = quat[1] / n, y = quat[2] / n, z = quat[3] / n;
  double R[3][3] = {{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                    {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                    {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}};
  double Sigma[3][3] = {};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) Sigma[i][j] += R[i][k] * scale[k] * scale[k] * R[j][k];
  double Rc[3][3], t[3], p[3];
  for (int i = 0; i < 3; ++i) {
    t[i] = cam[i * 4 + 3];
    p[i] = t[i];
    for (int j = 0; j < 3; ++j) Rc[i][j] = cam[i * 4 + j], p[i] += Rc[i][j] * mean[j];
  }
  double Sc[3][3] = {};  // Rc Sigma Rc^T
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k)
        for (int l = 0; l < 3; ++l) Sc[i][j] += Rc[i][k] * Sigma[k][l] * Rc[j][l];
  const double* K = cam + 16;
  double fx = K[0], fy = K[4], cx = K[2], cy = K[5];
  double tx = p[0], ty = p[1], tz = p[2];
  double tfx = 0.5 * width / fx, tfy = 0.5 * height / fy;
  double txc = tz * std::min(std::max(tx / tz, -(cx / fx + 0.3 * tfx)), (width - cx) / fx + 0.3 * tfx);
  double tyc = tz * std::min(std::max(ty / tz, -(cy / fy + 0.3 * tfy)), (height - cy) / fy + 0.3 * tfy);
  double J[2][3] = {{fx / tz, 0, -fx * txc / (tz * tz)}, {0, fy / tz, -fy * tyc / (tz * tz)}};
  double cov[2][2] = {};
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k)
        for (int l = 0; l < 3; ++l) cov[i][j] += J[i][k] * Sc[k][l] * J[j][l];
  cov[0][0] += kEps2d, cov[1][1] += kEps2d;
  double det = std::max(cov[0][0] * cov[1][1] - cov[0][1] * cov[1][0], 1e-10);
  Projected g;
  g.u = fx * tx / tz + cx, g.v = fy * ty / tz + cy, g.depth = tz;
  g.conic[0] = cov[1][1] / det, g.conic[1] = -(cov[0][1] + cov[1][0]) / (2 * det), g.conic[2] = cov[0][0] / det;
  g.pre_radius[0] = 3.33 * std::sqrt(cov[0][0]), g.pre_radius[1] = 3.33 * std::sqrt(cov[1][1]);
  double rx = std::ceil(g.pre_radius[0]), ry = std::ceil(g.pre_radius[1]);
  g.visible = tz > kNear && tz < kFar && g.u + rx > 0 && g.u - rx < width && g.v + ry > 0 && g.v - ry < height;
  return g;
}

std::vector<double> doubles(const at::Tensor& t) {
  at::Tensor d = t.to(at::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// Every rank's outputs: all W G Gaussians in the rank's camera, in source order.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const double width = ctx.scalar("image_width"), height = ctx.scalar("image_height");
  const int64_t G = in[0][0].size(0);
  std::vector<Tensors> out;
  for (int c = 0; c < W; ++c) {
    std::vector<double> cam = doubles(at::cat({in[c][5].reshape(-1), in[c][6].reshape(-1)}));
    at::Tensor ids = at::empty({W * G}, at::kInt), radii = at::empty({W * G, 2}, at::kInt);
    at::Tensor vals = at::empty({W * G, 10}, at::kDouble);
    auto ia = ids.accessor<int, 1>();
    auto ra = radii.accessor<int, 2>();
    auto va = vals.accessor<double, 2>();
    for (int s = 0; s < W; ++s) {
      std::vector<double> mean = doubles(in[s][0]), quat = doubles(in[s][1]), scale = doubles(in[s][2]);
      std::vector<double> opacity = doubles(in[s][3]), color = doubles(in[s][4]);
      for (int64_t n = 0; n < G; ++n) {
        Projected g = project_one(&mean[3 * n], &quat[4 * n], &scale[3 * n], cam.data(), width, height);
        if (!g.visible)
          throw pkb::Error("gsplat_3d_gaussian_splatting: Gaussian " + std::to_string(n) + " of rank " +
                           std::to_string(s) + " is not visible in camera " + std::to_string(c));
        const int64_t k = s * G + n;
        ia[k] = static_cast<int>(k);
        ra[k][0] = static_cast<int>(std::ceil(g.pre_radius[0])),
        ra[k][1] = static_cast<int>(std::ceil(g.pre_radius[1]));
        double row[10] = {g.u,        g.v,        g.depth,      g.conic[0],       g.conic[1],
                          g.conic[2], opacity[n], color[3 * n], color[3 * n + 1], color[3 * n + 2]};
        for (int j = 0; j < 10; ++j) va[k][j] = row[j];
      }
    }
    at::Tensor f = vals.to(ctx.float_dtype);
    out.push_back({at::zeros({W * G}, at::kInt), ids, radii, f.slice(1, 0, 2).contiguous(), f.select(1, 2).contiguous(),
                   f.slice(1, 3, 6).contiguous(), f.select(1, 6).contiguous(), f.slice(1, 7, 10).contiguous()});
  }
  return out;
}

// Camera c: rotation about y by 0.05 (c - (W - 1) / 2) and about x by 0.03 ((c mod 3) - 1), translation
// (0.1 sin c, 0.05 cos c, 0.1 (c mod 2)); viewmat = [R t; 0 0 0 1] (rounded to the dtype); K as PKB's.
std::vector<double> camera_of(int c, int W, double width, double height, at::ScalarType dtype) {
  double ay = 0.05 * (c - (W - 1) / 2.0), ax = 0.03 * ((c % 3) - 1);
  double Ry[3][3] = {{std::cos(ay), 0, std::sin(ay)}, {0, 1, 0}, {-std::sin(ay), 0, std::cos(ay)}};
  double Rx[3][3] = {{1, 0, 0}, {0, std::cos(ax), -std::sin(ax)}, {0, std::sin(ax), std::cos(ax)}};
  double t[3] = {0.1 * std::sin(c), 0.05 * std::cos(c), 0.1 * (c % 2)};
  std::vector<double> cam(25, 0.0);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) cam[i * 4 + j] += Ry[i][k] * Rx[k][j];
    cam[i * 4 + 3] = t[i];
  }
  cam[15] = 1;
  double f = 0.8 * std::min(width, height);
  double K[9] = {f, 0, width / 2, 0, f, height / 2, 0, 0, 1};
  for (int i = 0; i < 9; ++i) cam[16 + i] = K[i];
  at::Tensor rounded = at::tensor(cam, at::kDouble).to(dtype).to(at::kDouble);  // as the inputs hold them
  return std::vector<double>(rounded.data_ptr<double>(), rounded.data_ptr<double>() + 25);
}

// PKB's draws (means x, y = (u - 0.5) 1.5, z = 2 u + 2), the rank's camera, and the radius margin: each Gaussian is
// scaled up by 3% until 3.33 sqrt(cov) is at least `margin` from an integer on both axes in every camera.
Tensors prepare(const OracleContext& ctx, int rank, Tensors raw) {
  const int W = ctx.world;
  const auto dtype = raw[0].scalar_type();
  const double width = ctx.scalar("image_width"), height = ctx.scalar("image_height");
  const double margin = std::min(0.02, 0.16 / W);
  at::Tensor u = raw[0].to(at::kFloat);
  at::Tensor means = at::stack({(u.select(1, 0) - 0.5) * 1.5, (u.select(1, 1) - 0.5) * 1.5, u.select(1, 2) * 2 + 2}, 1);
  raw[0] = means.to(dtype);
  std::vector<std::vector<double>> cams;
  for (int c = 0; c < W; ++c) cams.push_back(camera_of(c, W, width, height, dtype));
  raw[5] = at::tensor(std::vector<double>(cams[rank].begin(), cams[rank].begin() + 16), at::kDouble)
               .view({1, 4, 4})
               .to(dtype);
  raw[6] =
      at::tensor(std::vector<double>(cams[rank].begin() + 16, cams[rank].end()), at::kDouble).view({1, 3, 3}).to(dtype);

  std::vector<double> mean = doubles(raw[0]), quat = doubles(raw[1]), scale = doubles(raw[2]);
  auto clear = [&](double v) { return std::fabs(v - std::round(v)) >= margin; };
  for (int64_t n = 0; n < raw[0].size(0); ++n) {
    for (int attempt = 0;; ++attempt) {
      bool ok = true;
      for (int c = 0; c < W && ok; ++c) {
        Projected g = project_one(&mean[3 * n], &quat[4 * n], &scale[3 * n], cams[c].data(), width, height);
        ok = clear(g.pre_radius[0]) && clear(g.pre_radius[1]);
      }
      if (ok) break;
      if (attempt == 200)
        throw pkb::Error("gsplat_3d_gaussian_splatting: cannot clear the radii of Gaussian " + std::to_string(n));
      at::Tensor grown = at::tensor(std::vector<double>{scale[3 * n] * 1.03 + 1e-4, scale[3 * n + 1] * 1.03 + 1e-4,
                                                        scale[3 * n + 2] * 1.03 + 1e-4},
                                    at::kDouble)
                             .to(dtype)
                             .to(at::kDouble);
      for (int j = 0; j < 3; ++j) scale[3 * n + j] = grown[j].item<double>();
    }
  }
  raw[2] = at::tensor(scale, at::kDouble).view({-1, 3}).to(dtype);
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("gsplat_3d_gaussian_splatting", reference, oracle, prepare);

}  // namespace problem_061
