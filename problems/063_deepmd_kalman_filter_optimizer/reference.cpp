#include "reference/reference.h"

#include <cmath>

namespace problem_063 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

constexpr double kLambda = 0.98, kNue = 0.9987;  // PKB's kalman_lambda and kalman_nue

Tensors reference(const RankContext& ctx, const Tensors& in) {
  const at::Tensor &H = in[0], &error = in[1], &weights = in[2], &P = in[3];
  const int64_t blocks = H.size(0);
  at::Tensor denominator = at::zeros({1, 1}, H.options());
  for (int64_t i = 0; i < blocks; ++i)
    denominator = denominator + (at::matmul(at::matmul(H[i].t(), P[i]), H[i]) + kLambda);
  ctx.comm->all_reduce(denominator);
  at::Tensor A = 1 / denominator;

  std::vector<at::Tensor> new_weights, new_P;
  for (int64_t i = 0; i < blocks; ++i) {
    at::Tensor K = at::matmul(P[i], H[i]);
    new_weights.push_back(weights[i] + A * error * K);
    new_P.push_back((1 / kLambda) * (P[i] - at::matmul(A * K, K.t())));
  }
  at::Tensor local = at::stack(new_weights).contiguous();
  at::Tensor gathered = at::empty({ctx.world * blocks, H.size(1), 1}, H.options());
  ctx.comm->all_gather(local, gathered);
  at::Tensor next_lambda = at::scalar_tensor(kNue * kLambda + 1 - kNue, H.options());
  return {gathered, at::stack(new_P), next_lambda};
}

// Plain loops in fp64: T = NB W lambda + sum over ranks and blocks of H^T (P H), then the rank-1 updates.
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  const int W = ctx.world;
  const int64_t NB = in[0][0].size(0), BS = in[0][0].size(1);
  std::vector<std::vector<std::vector<double>>> K(W, std::vector<std::vector<double>>(NB, std::vector<double>(BS)));
  double T = static_cast<double>(NB) * W * kLambda;
  for (int r = 0; r < W; ++r) {
    auto h = in[r][0].accessor<double, 3>();
    auto p = in[r][3].accessor<double, 3>();
    for (int64_t b = 0; b < NB; ++b)
      for (int64_t i = 0; i < BS; ++i) {
        double k = 0;
        for (int64_t j = 0; j < BS; ++j) k += p[b][i][j] * h[b][j][0];
        K[r][b][i] = k;
        T += h[b][i][0] * k;
      }
  }
  const double A = 1 / T;
  at::Tensor all_weights = at::empty({W * NB, BS, 1}, at::kDouble);
  auto aw = all_weights.accessor<double, 3>();
  std::vector<at::Tensor> P_new(W);
  for (int r = 0; r < W; ++r) {
    const double e = in[r][1].item<double>();
    auto w = in[r][2].accessor<double, 3>();
    P_new[r] = in[r][3].clone();
    auto p = P_new[r].accessor<double, 3>();
    for (int64_t b = 0; b < NB; ++b)
      for (int64_t i = 0; i < BS; ++i) {
        aw[r * NB + b][i][0] = w[b][i][0] + A * e * K[r][b][i];
        for (int64_t j = 0; j < BS; ++j) p[b][i][j] = (p[b][i][j] - A * K[r][b][i] * K[r][b][j]) / kLambda;
      }
  }
  at::Tensor next_lambda = at::scalar_tensor(kNue * kLambda + 1 - kNue, at::kDouble);
  std::vector<Tensors> out;
  for (int r = 0; r < W; ++r) out.push_back({all_weights, P_new[r], next_lambda});
  return out;
}

// Symmetric positive-definite covariance blocks from the N(0, 1) draw A: I + (A + A^T) / (4 sqrt(2 BS)); the
// symmetric part (A + A^T) / sqrt(2) has spectral radius about 2 sqrt(BS), so the eigenvalues lie in (0.5, 1.5).
Tensors prepare(const OracleContext&, int, Tensors raw) {
  at::Tensor A = raw[3];
  const int64_t BS = A.size(1);
  at::Tensor eye = at::eye(BS, A.options()).unsqueeze(0);
  raw[3] = (eye + (A + A.transpose(1, 2)) / (4 * std::sqrt(2.0 * BS))).contiguous();
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("deepmd_kalman_filter_optimizer", reference, oracle, prepare);

}  // namespace problem_063
