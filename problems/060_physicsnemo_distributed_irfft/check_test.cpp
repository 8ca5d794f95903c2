// Problem 60: the output is irfft2 of the half spectrum, the c_l-weighted sum, whatever S is. fp32 irfft2 of the
// whole spectrum and a kernel that needs no completion (the weighted, zero-padded half spectrum through a complex
// inverse FFT, real part) pass; a completion without the row flip (conj(S[k, Wd - l])), the half spectrum without
// the factor 2 and a forward-FFT sign fail.
#include <gtest/gtest.h>

#include "problems/check_case.h"

namespace check_060 {  // named, not anonymous: the references build as unity batches

enum class Variant { irfft2, weighted_half, no_row_flip, no_factor_two, forward_sign };

std::vector<pkb::Tensors> candidate(const std::vector<pkb::Tensors>& in, Variant v) {
  const int W = static_cast<int>(in.size());
  std::vector<at::Tensor> rows;
  for (const auto& r : in) rows.push_back(at::view_as_complex(r[0].contiguous()));
  at::Tensor half = at::cat(rows, 2);  // complex64 (B, C, H, Wd/2 + 1)
  const int64_t H = half.size(2), Wh = half.size(3), Wd = 2 * (Wh - 1), Wl = Wd / W;
  at::Tensor field;
  if (v == Variant::irfft2) {
    field = at::fft_irfft2(half, at::IntArrayRef{H, Wd}, {2, 3}, "ortho");
  } else {
    at::Tensor G = at::zeros({half.size(0), half.size(1), H, Wd}, half.options());
    G.slice(3, 0, Wh).copy_(half);
    if (v == Variant::weighted_half) G.slice(3, 1, Wh - 1).mul_(2);
    if (v == Variant::no_row_flip) G.slice(3, Wh, Wd).copy_(half.slice(3, 1, Wd - Wh + 1).flip({3}).conj());
    if (v == Variant::forward_sign) G.slice(3, 1, Wh - 1).mul_(2);
    at::Tensor t = v == Variant::forward_sign ? at::fft_fft2(G, c10::nullopt, {2, 3}, "ortho")
                                              : at::fft_ifft2(G, c10::nullopt, {2, 3}, "ortho");
    field = at::real(t);
  }
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) out.push_back({field.slice(3, r * Wl, (r + 1) * Wl).contiguous()});
  return out;
}

TEST(Problem060, Irfft2SemanticsPassWrongCompletionsFail) {
  for (int W : {3, 4}) {
    auto c = pkb::check_test::make_case("060_physicsnemo_distributed_irfft", W, {.small = true, .seed = 0});
    const auto& in = c.inputs;
    EXPECT_TRUE(pkb::check_test::passes(c, candidate(in, Variant::irfft2))) << "W=" << W;
    EXPECT_TRUE(pkb::check_test::passes(c, candidate(in, Variant::weighted_half))) << "W=" << W;
    EXPECT_FALSE(pkb::check_test::passes(c, candidate(in, Variant::no_row_flip))) << "W=" << W;
    EXPECT_FALSE(pkb::check_test::passes(c, candidate(in, Variant::no_factor_two))) << "W=" << W;
    EXPECT_FALSE(pkb::check_test::passes(c, candidate(in, Variant::forward_sign))) << "W=" << W;
  }
}

}  // namespace check_060
