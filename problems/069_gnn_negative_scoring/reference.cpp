#include "reference/reference.h"

#include <cmath>

namespace problem_069 {  // named, not anonymous: the references build as unity batches

using namespace pkb;

// The rows (positive, negatives) of every rank, replicated to every peer with an uneven all-to-all after an
// all-reduce of one-hot sizes (PKB's pattern), then the ranks from sigmoids rounded to the dtype.
Tensors reference(const RankContext& ctx, const Tensors& in) {
  at::Tensor rows = at::cat({in[0].unsqueeze(1), in[1]}, 1).contiguous();  // (P_r, 1 + Nn)
  const int W = ctx.world;
  at::Tensor sizes = at::zeros({W}, rows.options().dtype(at::kLong));  // on the communicator's device
  sizes[ctx.rank] = rows.size(0);
  ctx.comm->all_reduce(sizes);
  sizes = sizes.to(at::kCPU);
  std::vector<int64_t> recv(sizes.data_ptr<int64_t>(), sizes.data_ptr<int64_t>() + W);
  std::vector<int64_t> send(W, rows.size(0));
  at::Tensor all = at::empty({sizes.sum().item<int64_t>(), rows.size(1)}, rows.options());
  ctx.comm->all_to_all(rows.repeat({W, 1}).contiguous(), all, send, recv);
  at::Tensor probs = at::sigmoid(all);
  return {1 + probs.slice(1, 1).gt(probs.slice(1, 0, 1)).sum(1)};
}

// Every rank's rows in rank order; rank = 1 + #{negatives with a raw score above the positive's}, in fp64 (sigmoid
// is monotone, and prepare keeps the margins that make rounding irrelevant).
std::vector<Tensors> oracle(const OracleContext& ctx, const std::vector<Tensors>& in) {
  std::vector<int64_t> ranks;
  for (const auto& r : in) {
    at::Tensor pos = r[0].to(at::kDouble).contiguous(), neg = r[1].to(at::kDouble).contiguous();
    auto p = pos.accessor<double, 1>();
    auto n = neg.accessor<double, 2>();
    for (int64_t i = 0; i < neg.size(0); ++i) {
      int64_t above = 0;
      for (int64_t j = 0; j < neg.size(1); ++j) above += n[i][j] > p[i];
      ranks.push_back(1 + above);
    }
  }
  at::Tensor out = at::tensor(ranks, at::kLong);
  return std::vector<Tensors>(ctx.world, Tensors{out});
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// Spacing of bf16 values at v > 0.
double bf16_ulp(double v) {
  int e;
  std::frexp(v, &e);  // v in [2^(e-1), 2^e)
  return std::ldexp(1.0, e - 8);
}

// Far enough apart that no rounding of either sigmoid to bf16 (or anything finer) makes them equal or swaps them.
bool separated(double neg, double pos) {
  double a = sigmoid(neg), b = sigmoid(pos);
  return std::fabs(a - b) >= 2 * bf16_ulp(std::max(a, b));
}

float to_dtype(double v, at::ScalarType dtype) {
  float f = static_cast<float>(v);
  return dtype == at::kBFloat16 ? static_cast<float>(c10::BFloat16(f)) : f;
}

// Moves every negative too close to its positive by steps of 1/16: up when it scored higher and the sigmoid has room
// above within 4 (else down), down otherwise. The moved value is rounded to the dtype and checked again.
Tensors prepare(const OracleContext&, int, Tensors raw) {
  const at::ScalarType dtype = raw[1].scalar_type();
  at::Tensor pos = raw[0].to(at::kDouble).contiguous(), neg = raw[1].to(at::kDouble).contiguous();
  auto p = pos.accessor<double, 1>();
  auto n = neg.accessor<double, 2>();
  for (int64_t i = 0; i < neg.size(0); ++i)
    for (int64_t j = 0; j < neg.size(1); ++j) {
      double x = n[i][j];
      if (separated(x, p[i])) continue;
      bool moved = false;
      if (x > p[i])
        for (int step = 1; step <= 64 && !moved; ++step) {
          double up = to_dtype(x + step / 16.0, dtype);
          if (separated(up, p[i])) n[i][j] = up, moved = true;
        }
      for (int step = 1; !moved; ++step) {
        double down = to_dtype(std::min(x, p[i]) - step / 16.0, dtype);
        if (separated(down, p[i])) n[i][j] = down, moved = true;
      }
    }
  raw[1] = neg.to(dtype);
  return raw;
}

PKB_REGISTER_PROBLEM_WITH_PREPARE("gnn_negative_scoring", reference, oracle, prepare);

}  // namespace problem_069
