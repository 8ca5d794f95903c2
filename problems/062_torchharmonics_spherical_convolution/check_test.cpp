// Problem 62: psi, weight and bias are per rank. A kernel that all-gathers x and contracts every polar block with
// that block's own psi (fp32, a different order of sums) passes; one that applies its own psi to every polar
// block, and one that uses rank 0's weight and bias everywhere, fail.
#include <gtest/gtest.h>

#include "problems/check_case.h"

namespace check_062 {  // named, not anonymous: the references build as unity batches

enum class Variant { gather_all, own_psi_everywhere, rank0_weight };

std::vector<pkb::Tensors> candidate(const std::vector<pkb::Tensors>& in, Variant v) {
  const int W = static_cast<int>(in.size()), az = W % 2 == 0 ? 2 : 1;
  const int64_t B = in[0][0].size(0), C = in[0][0].size(1), nl = in[0][0].size(2), nw = in[0][0].size(3);
  const int64_t nlon = nw * az, KB = in[0][3].size(2), Cc = C / az;
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) {
    const int p = r / az, a = r % az;
    at::Tensor y = at::zeros({B, C, KB, nl, nw}, at::kFloat);
    for (int q = 0; q < W; ++q) {  // rows of polar block q / az, channel chunk q % az
      const int pq = q / az, aq = q % az;
      // The wrong kernel reads the psi of its own polar index (same channel chunk) for every block.
      const int psi_rank = v == Variant::own_psi_everywhere ? p * az + aq : q;
      // The input rows of polar block pq, channel chunk aq, all longitudes.
      std::vector<at::Tensor> lon_blocks;
      for (int b = 0; b < az; ++b) lon_blocks.push_back(in[pq * az + b][0].slice(1, aq * Cc, (aq + 1) * Cc));
      at::Tensor rows = at::cat(lon_blocks, 3);  // (B, Cc, nl, nlon)
      const at::Tensor &idx = in[psi_rank][1], &val = in[psi_rank][2];
      auto ia = idx.accessor<int64_t, 2>();
      auto va = val.accessor<float, 1>();
      for (int64_t n = 0; n < val.size(0); ++n) {
        const int64_t k = ia[0][n], o = ia[1][n], i = ia[2][n] / nlon, l = ia[2][n] % nlon;
        if (o / nl != p) continue;
        at::Tensor shifted = rows.select(2, i).roll({-l}, {2}).slice(2, a * nw, (a + 1) * nw);
        y.slice(1, aq * Cc, (aq + 1) * Cc).select(2, k).select(2, o % nl).add_(shifted, va[n]);
      }
    }
    const int wr = v == Variant::rank0_weight ? 0 : r;
    out.push_back({at::einsum("bckyz,ock->boyz", {y, in[wr][3]}) + in[wr][4].view({1, -1, 1, 1})});
  }
  return out;
}

TEST(Problem062, PerRankPsiAndWeightsAreUsed) {
  for (int W : {3, 4}) {
    auto c = pkb::check_test::make_case("062_torchharmonics_spherical_convolution", W, {.small = true, .seed = 0});
    const auto& in = c.inputs;
    EXPECT_TRUE(pkb::check_test::passes(c, candidate(in, Variant::gather_all))) << "W=" << W;
    EXPECT_FALSE(pkb::check_test::passes(c, candidate(in, Variant::own_psi_everywhere))) << "W=" << W;
    EXPECT_FALSE(pkb::check_test::passes(c, candidate(in, Variant::rank0_weight))) << "W=" << W;
  }
}

}  // namespace check_062
