// Problem 72: a direct time-domain fp32 convolution passes (the FFT's error is far inside the tolerance), and a kernel
// that keeps the zig-zag order as if it were the sequence fails. The tensor-wide rms slack is why the filter is
// scaled per channel: with PKB's h ~ c, zeroing the 4 lowest of 1024 channels passes; with ours it fails.
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_072 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "072_hyena_forward_cp";

// PKB's filter on every rank, h[c, t] = bf16_round(c HL + t) / HL, in place of ours (scaled per channel).
void use_pkb_filter(std::vector<pkb::Tensors>& in) {
  const int64_t C = in[0][3].size(0), HL = in[0][3].size(1);
  at::Tensor c = at::arange(C, at::kDouble).unsqueeze(1), t = at::arange(HL, at::kDouble).unsqueeze(0);
  at::Tensor h = ((c * HL + t).to(at::kBFloat16).to(at::kDouble) / HL).to(at::kBFloat16);
  for (auto& r : in) r[3] = h;
}

enum class Kernel { direct_fp32, zigzag_as_sequence, zero_low_channels };

// One process: the global sequence, a direct causal fp32 convolution (W >= 2: no wrap-around), each rank's shards.
std::vector<pkb::Tensors> kernel(const Case& c, Kernel k) {
  const int W = c.run.world;
  const int64_t lc = c.inputs[0][0].size(2) / 2;
  auto global = [&](int i) {
    std::vector<at::Tensor> chunks(2 * W);
    for (int r = 0; r < W; ++r) {
      at::Tensor x = c.inputs[r][i][0];
      if (k == Kernel::zigzag_as_sequence) {
        chunks[2 * r] = x.slice(1, 0, lc), chunks[2 * r + 1] = x.slice(1, lc, 2 * lc);
      } else {
        chunks[r] = x.slice(1, 0, lc), chunks[2 * W - 1 - r] = x.slice(1, lc, 2 * lc);
      }
    }
    return at::cat(chunks, 1);
  };
  at::Tensor x1 = global(0), z = global(1) * global(2);  // rounded product
  const int64_t C = z.size(0), L = z.size(1), HL = c.inputs[0][3].size(1), taps = std::min(HL, L);
  at::Tensor padded = at::constant_pad_nd(z.to(at::kFloat), {taps - 1, 0});
  at::Tensor h = c.inputs[0][3].slice(1, 0, taps).to(at::kFloat).flip(1).unsqueeze(1);
  at::Tensor y = at::conv1d(padded.unsqueeze(0), h, at::Tensor(), at::IntArrayRef{1}, at::IntArrayRef{0},
                            at::IntArrayRef{1}, C)[0];
  y = y + z.to(at::kFloat) * c.inputs[0][4].to(at::kFloat).unsqueeze(1);
  at::Tensor out = x1 * y.to(at::kBFloat16);
  if (k == Kernel::zero_low_channels) out.slice(0, 0, 4).zero_();
  std::vector<pkb::Tensors> got;
  for (int r = 0; r < W; ++r) {
    at::Tensor mine =
        k == Kernel::zigzag_as_sequence
            ? out.slice(1, 2 * r * lc, (2 * r + 2) * lc)
            : at::cat({out.slice(1, r * lc, (r + 1) * lc), out.slice(1, (2 * W - 1 - r) * lc, (2 * W - r) * lc)}, 1);
    got.push_back({mine.t().unsqueeze(0).contiguous()});
  }
  return got;
}

TEST(Problem072, DirectConvolutionPassesZigzagMistakeFails) {
  for (int world : {2, 3}) {
    Case c = make_case(kProblem, world, {.small = true});
    EXPECT_TRUE(passes(c, kernel(c, Kernel::direct_fp32))) << "W=" << world;
    EXPECT_FALSE(passes(c, kernel(c, Kernel::zigzag_as_sequence))) << "W=" << world;
  }
}

TEST(Problem072, TensorWideSlackHidesLowChannelsUnderPkbsFilter) {
  const std::map<std::string, int64_t> params = {{"C", 1024}};  // PKB's channel count, short sequences
  Case pkb_filter = make_case(kProblem, 2, {.params = params, .small = true, .edit_inputs = use_pkb_filter});
  Case ours = make_case(kProblem, 2, {.params = params, .small = true});
  EXPECT_TRUE(passes(pkb_filter, kernel(pkb_filter, Kernel::direct_fp32)));
  EXPECT_TRUE(passes(pkb_filter, kernel(pkb_filter, Kernel::zero_low_channels))) << "channels 0-3 unchecked";
  EXPECT_TRUE(passes(ours, kernel(ours, Kernel::direct_fp32)));
  EXPECT_FALSE(passes(ours, kernel(ours, Kernel::zero_low_channels)));
}

}  // namespace check_072
