// Problem 80: the values are ~1/K, below PKB's atol, so PKB's check passes zeros. Ours (rtol 1e-4, atol 0) passes an
// fp32 scaling-vector kernel that drops the cancelling normalisations, and fails zeros and a kernel that normalises
// the prototype rows by its own samples only (no all-reduce).
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_080 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "080_dinov2_distributed_sinkhorn_knopp";

// fp32 scaling vectors: a (K) from the row sums over all ranks' samples (or the own samples only), b per sample;
// exp recomputed; no global total, no Btot (both cancel).
std::vector<pkb::Tensors> fp32_kernel(const Case& c, bool all_reduce_rows, int iterations = 3) {
  const int W = c.run.world;
  std::vector<at::Tensor> e;
  for (const auto& r : c.inputs) e.push_back(at::exp(r[0] / 0.07));  // (B, K) fp32
  const double k = static_cast<double>(e[0].size(1));
  std::vector<at::Tensor> b(W);
  for (int r = 0; r < W; ++r) b[r] = at::ones({e[r].size(0)}, at::kFloat);
  std::vector<at::Tensor> a(W);
  for (int it = 0; it < iterations; ++it) {
    std::vector<at::Tensor> rows(W);
    for (int r = 0; r < W; ++r) rows[r] = at::mv(e[r].t(), b[r]);
    at::Tensor total = rows[0].clone();
    for (int r = 1; r < W; ++r) total += rows[r];
    for (int r = 0; r < W; ++r) {
      a[r] = 1.0 / (k * (all_reduce_rows ? total : rows[r]));
      b[r] = 1.0 / at::mv(e[r], a[r]);
    }
  }
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) out.push_back({(e[r] * a[r].unsqueeze(0) * b[r].unsqueeze(1)).contiguous()});
  return out;
}

TEST(Problem080, Fp32KernelPassesLocalRowSumsAndZerosFail) {
  for (int world : {2, 4}) {
    Case c = make_case(kProblem, world, {.params = {{"B", 24}, {"K", 40}}});  // CI's shapes
    EXPECT_TRUE(passes(c, fp32_kernel(c, true))) << "W=" << world;
    EXPECT_FALSE(passes(c, fp32_kernel(c, false))) << "row sums of the own samples only, W=" << world;
    std::vector<pkb::Tensors> zeros;
    for (const auto& e : c.expected) zeros.push_back({at::zeros_like(e[0])});
    EXPECT_FALSE(passes(c, zeros)) << "zeros, W=" << world;
  }
  Case full = make_case(kProblem, 2, {.params = {{"K", 2048}}});  // PKB's B = 1024 samples per rank, fewer prototypes
  EXPECT_TRUE(passes(full, fp32_kernel(full, true))) << "default shapes";
  EXPECT_FALSE(passes(full, fp32_kernel(full, false))) << "row sums of the own samples only, default shapes";
  for (const auto& e : full.expected)  // PKB's allclose, atol = rtol = 1e-2
    EXPECT_TRUE(
        pkb::compare(pkb::Policy::paper_allclose, at::zeros_like(e[0]), e[0], pkb::Tolerance{}, at::kFloat).pass)
        << "PKB's check passes zeros";
}

}  // namespace check_080
