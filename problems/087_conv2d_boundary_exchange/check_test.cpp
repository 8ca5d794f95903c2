// Problem 87: an fp32 convolution of the whole zero-padded image with each rank's own weight passes; kernels that
// pad every band with zeros (no halo exchange), use rank 0's weight and bias everywhere, or swap the halos fail.
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_087 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "087_conv2d_boundary_exchange";

enum class Kernel { whole_image, no_halo, rank0_weights, swapped_halos };

std::vector<pkb::Tensors> run_kernel(const Case& c, Kernel kernel) {
  const int W = c.run.world;
  const int64_t h = c.inputs[0][0].size(2);
  std::vector<at::Tensor> bands;
  for (const auto& r : c.inputs) bands.push_back(r[0].to(at::kFloat));
  at::Tensor image = at::constant_pad_nd(at::cat(bands, 2), {0, 0, 1, 1});  // rows only; width padded by the conv
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor rows = image.slice(2, r * h, r * h + h + 2).clone();
    if (kernel == Kernel::no_halo) {
      rows.select(2, 0).zero_();
      rows.select(2, h + 1).zero_();
    }
    if (kernel == Kernel::swapped_halos) {
      at::Tensor top = rows.select(2, 0).clone();
      rows.select(2, 0).copy_(rows.select(2, h + 1));
      rows.select(2, h + 1).copy_(top);
    }
    const pkb::Tensors& p = c.inputs[kernel == Kernel::rank0_weights ? 0 : r];
    const std::vector<int64_t> strides = {1, 1}, pads = {0, 1};
    out.push_back({at::conv2d(rows, p[1].to(at::kFloat), p[2].to(at::kFloat), strides, pads).to(at::kBFloat16)});
  }
  return out;
}

TEST(Problem087, OwnWeightsAndHalosPassMistakesFail) {
  for (int world : {2, 3, 4}) {
    Case c = make_case(kProblem, world, {.small = true});
    EXPECT_TRUE(passes(c, run_kernel(c, Kernel::whole_image))) << "W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::no_halo))) << "no halo exchange, W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::rank0_weights))) << "rank 0's weight, W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::swapped_halos))) << "swapped halos, W=" << world;
  }
}

}  // namespace check_087
