// Problem 32 scales the LoRA factors (A ~ N(0, 1/in), B ~ N(0, 0.01)). With them an accurate fp32 kernel passes and
// kernels that drop the base projections or the adapters fail; with PKB's N(0, 1) factors the adapters outweigh the
// base layers so much that the base projections move the output by about the tolerance. Checked through
// check_outputs, as pkb eval does.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "check_case.h"

namespace check_032 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "032_fused_moe_fwd_lora";

// M = 256 tokens. pkb_lora_scale undoes the LoRA factors' scaling: N(0, 1) factors, as PKB draws them.
Case lora_case(int world, bool pkb_lora_scale) {
  pkb::check_test::CaseOptions opt{.params = {{"M", 256}}};
  if (pkb_lora_scale)
    opt.edit_inputs = [](std::vector<pkb::Tensors>& in) {
      for (auto& r : in)
        for (int i = 9; i < 15; ++i)
          r[i] = (r[i].to(at::kFloat) * (i % 2 == 1 ? std::sqrt(static_cast<double>(r[i].size(1))) : 10.0))
                     .to(at::kBFloat16);
    };
  return make_case(kProblem, world, opt);
}

at::Tensor f32(const at::Tensor& t) { return t.to(at::kFloat); }

at::Tensor mlp(const pkb::Tensors& w, const at::Tensor& x, bool base, bool adapters) {
  auto proj = [&](const at::Tensor& in, int i, int a) {
    at::Tensor y = base ? in.mm(f32(w[i]).t()) + f32(w[i + 1]) : f32(w[i + 1]).expand({in.size(0), w[i].size(0)});
    return adapters ? y + in.mm(f32(w[a]).t()).mm(f32(w[a + 1]).t()) : y;
  };
  at::Tensor y = at::silu(proj(x, 3, 9)) * proj(x, 5, 11);
  return proj(y, 7, 13);
}

// fp32 router and experts, one rounding at the end.
std::vector<pkb::Tensors> kernel(const Case& c, bool base, bool adapters) {
  const int W = c.run.world;
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor x = f32(c.inputs[r][0]);
    at::Tensor p = at::softmax(x.mm(f32(c.inputs[r][1]).t()) + f32(c.inputs[r][2]), -1);
    auto [w, e] = p.topk(2, -1);
    at::Tensor o = at::zeros_like(x);
    for (int q = 0; q < W; ++q) {
      at::Tensor y = mlp(c.inputs[q], x, base, adapters);
      for (int k = 0; k < 2; ++k) {
        at::Tensor mine = (at::div(e.select(1, k), 8 / W, "floor") == q).to(at::kFloat);
        o += (w.select(1, k) * mine).unsqueeze(1) * y;
      }
    }
    out.push_back({o.to(at::kBFloat16)});
  }
  return out;
}

TEST(Problem032, AccurateKernelPassesDroppingEitherPathFails) {
  for (int world : {2, 4}) {
    Case c = lora_case(world, false);
    EXPECT_TRUE(passes(c, kernel(c, true, true))) << "fp32, W=" << world;
    EXPECT_FALSE(passes(c, kernel(c, false, true))) << "base projections dropped (biases kept), W=" << world;
    EXPECT_FALSE(passes(c, kernel(c, true, false))) << "adapters dropped, W=" << world;
  }
}

// Why the factors are scaled: at PKB's N(0, 1) the base projections move the output by about 1%, the size of the
// tolerance itself; with the scaled factors by far more.
double base_share(const Case& c) {
  auto with = kernel(c, true, true), without = kernel(c, false, true);
  double diff = 0, norm = 0;
  for (size_t r = 0; r < with.size(); ++r) {
    at::Tensor a = with[r][0].to(at::kDouble), b = without[r][0].to(at::kDouble);
    diff += (a - b).pow(2).sum().item<double>();
    norm += a.pow(2).sum().item<double>();
  }
  return std::sqrt(diff / norm);
}

TEST(Problem032, UnscaledAdaptersHideTheBaseProjections) {
  EXPECT_LT(base_share(lora_case(2, true)), 0.03);
  EXPECT_GT(base_share(lora_case(2, false)), 0.3);
}

}  // namespace check_032
