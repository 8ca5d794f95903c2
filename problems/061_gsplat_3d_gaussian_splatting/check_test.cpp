// Problem 61: with the projection defined in fp32 and the radii kept clear of integers, an fp32 kernel that
// associates the covariance products differently ((J R_c) Sigma (J R_c)^T, Sigma from R S S^T R^T) matches the
// integer radii exactly and passes; projecting with the source rank's camera, dropping eps2d, and local Gaussian
// ids fail. gaussian_ids are global by source rank (s G + n, problem.json's deviations): PKB's destination-rank
// offsets fail.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_061 {  // named, not anonymous: the references build as unity batches

enum class Variant { other_association, source_camera, no_eps2d, local_ids };

at::Tensor rotmat(const at::Tensor& quats) {
  at::Tensor q = quats / quats.norm(2, {-1}, true);
  at::Tensor w = q.select(1, 0), x = q.select(1, 1), y = q.select(1, 2), z = q.select(1, 3);
  return at::stack({1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y), 2 * (x * y + w * z),
                    1 - 2 * (x * x + z * z), 2 * (y * z - w * x), 2 * (x * z - w * y), 2 * (y * z + w * x),
                    1 - 2 * (x * x + y * y)},
                   -1)
      .view({-1, 3, 3});
}

// Rank s's Gaussians in camera (viewmat, K), fp32: ids, radii (int32) and the 8 outputs' float values.
pkb::Tensors project(const pkb::Tensors& g, const at::Tensor& view, const at::Tensor& K, int64_t first_id, double width,
                     double height, Variant v) {
  at::Tensor mu = g[0].to(at::kFloat), R = rotmat(g[1].to(at::kFloat)), s2 = g[2].to(at::kFloat).pow(2);
  at::Tensor Sigma = at::matmul(R * s2.unsqueeze(1), R.transpose(1, 2));  // R S^2 R^T
  at::Tensor Rc = view.slice(0, 0, 3).slice(1, 0, 3).to(at::kFloat),
             t = view.slice(0, 0, 3).select(1, 3).to(at::kFloat);
  at::Tensor Kf = K.to(at::kFloat);
  const double fx = Kf[0][0].item<double>(), fy = Kf[1][1].item<double>(), cx = Kf[0][2].item<double>(),
               cy = Kf[1][2].item<double>();
  at::Tensor p = at::matmul(Rc, mu.t()).t() + t;
  at::Tensor tx = p.select(1, 0), ty = p.select(1, 1), tz = p.select(1, 2);
  const double tfx = 0.5 * width / fx, tfy = 0.5 * height / fy;
  at::Tensor txc = tz * (tx / tz).clamp(-(cx / fx + 0.3 * tfx), (width - cx) / fx + 0.3 * tfx);
  at::Tensor tyc = tz * (ty / tz).clamp(-(cy / fy + 0.3 * tfy), (height - cy) / fy + 0.3 * tfy);
  at::Tensor zeros = at::zeros_like(tz);
  at::Tensor J =
      at::stack({fx / tz, zeros, -fx * txc / (tz * tz), zeros, fy / tz, -fy * tyc / (tz * tz)}, -1).view({-1, 2, 3});
  at::Tensor JR = at::matmul(J, Rc);
  at::Tensor cov = at::matmul(at::matmul(JR, Sigma), JR.transpose(1, 2));
  if (v != Variant::no_eps2d) cov = cov + 0.3 * at::eye(2, at::kFloat);
  at::Tensor a = cov.select(1, 0).select(1, 0), b = cov.select(1, 0).select(1, 1), c = cov.select(1, 1).select(1, 0),
             d = cov.select(1, 1).select(1, 1);
  at::Tensor det = (a * d - b * c).clamp_min(1e-10);
  at::Tensor radii = at::ceil(3.33 * at::sqrt(at::stack({a, d}, 1))).to(at::kInt);
  at::Tensor ids = (at::arange(mu.size(0), at::kInt) + (v == Variant::local_ids ? 0 : first_id)).to(at::kInt);
  at::Tensor vals = at::stack({fx * tx / tz + cx, fy * ty / tz + cy, tz, d / det, -(b + c) / (2 * det), a / det}, 1);
  return {ids, radii, vals};
}

std::vector<pkb::Tensors> candidate(const std::vector<pkb::Tensors>& in, double width, double height, Variant v) {
  const int W = static_cast<int>(in.size());
  const at::ScalarType dtype = in[0][0].scalar_type();
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) {
    std::vector<at::Tensor> ids, radii, vals, opac, col;
    int64_t first = 0;
    for (int s = 0; s < W; ++s) {
      const int cam = v == Variant::source_camera ? s : r;
      pkb::Tensors p = project(in[s], in[cam][5][0], in[cam][6][0], first, width, height, v);
      ids.push_back(p[0]), radii.push_back(p[1]), vals.push_back(p[2]);
      opac.push_back(in[s][3]), col.push_back(in[s][4]);
      first += in[s][0].size(0);
    }
    at::Tensor f = at::cat(vals).to(dtype);
    at::Tensor id = at::cat(ids);
    out.push_back({at::zeros_like(id), id, at::cat(radii), f.slice(1, 0, 2).contiguous(), f.select(1, 2).contiguous(),
                   f.slice(1, 3, 6).contiguous(), at::cat(opac), at::cat(col)});
  }
  return out;
}

bool passes(const pkb::ProblemSpec& s, const pkb::RunShape& run, const std::vector<pkb::Tensors>& got,
            const std::vector<pkb::Tensors>& want, std::string* why = nullptr) {
  for (size_t r = 0; r < got.size(); ++r)
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      auto c = pkb::compare(pkb::Policy::robust, got[r][i], want[r][i], s.tolerance,
                            pkb::to_aten(pkb::tensor_dtype(s.outputs[i], run)));
      if (!c.pass) {
        if (why) *why = "rank " + std::to_string(r) + " " + s.outputs[i].name + ": " + pkb::describe(c);
        return false;
      }
    }
  return true;
}

TEST(Problem061, Fp32KernelsMatchRadiiMistakesFail) {
  auto s = pkb::load_problem(pkb::repo_root() / "problems/061_gsplat_3d_gaussian_splatting");
  for (auto dtype : {pkb::DType::bf16, pkb::DType::f32}) {
    const int W = 4;
    auto run = pkb::resolve_run(s, W, dtype);  // the full 1024 Gaussians per rank
    std::vector<pkb::Tensors> in;
    for (int r = 0; r < W; ++r) in.push_back(pkb::make_inputs(s, run, r, 0, 0).tensors);
    auto ctx = pkb::oracle_context(s, run);
    auto want = pkb::expected_outputs(s, run, in);
    const double width = ctx.scalar("image_width"), height = ctx.scalar("image_height");
    std::string why;
    EXPECT_TRUE(passes(s, run, candidate(in, width, height, Variant::other_association), want, &why)) << why;
    EXPECT_FALSE(passes(s, run, candidate(in, width, height, Variant::source_camera), want)) << "source camera";
    EXPECT_FALSE(passes(s, run, candidate(in, width, height, Variant::no_eps2d), want)) << "no eps2d";
    EXPECT_FALSE(passes(s, run, candidate(in, width, height, Variant::local_ids), want)) << "local ids";
  }
}

// The documented ids, written out by hand: rank r's row s G + n is Gaussian n of source rank s, with id s G + n on
// every rank. PKB's reference (upstream gsplat's packed path) adds the destination's offset instead, r G + n: a kernel
// that copies it fails on every row from another rank.
TEST(Problem061, GaussianIdsAreGlobalBySourceRank) {
  auto s = pkb::load_problem(pkb::repo_root() / "problems/061_gsplat_3d_gaussian_splatting");
  const int W = 3, G = 7;
  auto run = pkb::resolve_run(s, W, pkb::DType::f32, {{"G", G}});
  std::vector<pkb::Tensors> in;
  for (int r = 0; r < W; ++r) in.push_back(pkb::make_inputs(s, run, r, 0, 0).tensors);
  auto want = pkb::expected_outputs(s, run, in);
  const auto dtype = pkb::to_aten(pkb::tensor_dtype(s.outputs[1], run));
  for (int r = 0; r < W; ++r) {
    std::vector<int> source_ids, destination_ids;
    for (int src = 0; src < W; ++src)
      for (int n = 0; n < G; ++n) source_ids.push_back(src * G + n), destination_ids.push_back(r * G + n);
    at::Tensor documented = at::tensor(source_ids, at::kInt), pkb_upstream = at::tensor(destination_ids, at::kInt);
    ASSERT_TRUE(at::equal(want[r][1], documented)) << "rank " << r << ": " << want[r][1];
    EXPECT_TRUE(pkb::compare(pkb::Policy::robust, documented, want[r][1], s.tolerance, dtype).pass);
    EXPECT_FALSE(pkb::compare(pkb::Policy::robust, pkb_upstream, want[r][1], s.tolerance, dtype).pass) << "rank " << r;
  }
}

}  // namespace check_061
