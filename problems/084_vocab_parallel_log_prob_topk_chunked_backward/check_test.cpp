// Problem 84: with the prepared rows the kept set is independent of rounding, so a kernel that makes the filter's
// decisions in fp32 (from the top, by the mass above each candidate) passes; zeros (what PKB's +8 boost makes of
// the output), a gradient without top-p, the unfiltered softmax's gradient and an unscaled gradient fail.
#include <gtest/gtest.h>

#include "check_case.h"
#include "reference/vocab_topk.h"

namespace check_084 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "084_vocab_parallel_log_prob_topk_chunked_backward";

enum class Kernel { fp32_from_top, zeros, no_top_p, unfiltered, unscaled };

std::vector<pkb::Tensors> run_kernel(const Case& c, Kernel kernel) {
  at::Tensor rows = pkb::vocab_topk::full_rows(c.inputs).to(at::kFloat), target = c.inputs[0][1].reshape({-1});
  at::Tensor g = c.inputs[0][2].reshape({-1}).to(at::kFloat);
  at::Tensor grad = at::zeros_like(rows);
  for (int64_t t = 0; t < rows.size(0); ++t) {
    at::Tensor row = rows[t];
    auto [sorted, order] = row.sort(0, /*descending=*/true);
    int64_t keep = kernel == Kernel::unfiltered ? row.size(0) : row.ge(sorted[9]).sum().item<int64_t>();
    at::Tensor p = at::softmax(sorted.slice(0, 0, keep), 0);
    at::Tensor kept_sorted = kernel == Kernel::no_top_p || kernel == Kernel::unfiltered ? at::ones({keep}, at::kBool)
                                                                                        : (p.cumsum(0) - p).lt(0.9);
    at::Tensor kept = at::zeros({row.size(0)}, at::kBool);
    kept.index_put_({order.slice(0, 0, keep)}, kept_sorted);
    at::Tensor probs = at::softmax(row.masked_fill(~kept, -INFINITY), 0);
    at::Tensor onehot = at::zeros_like(probs);
    onehot[target[t].item<int64_t>()] = 1.0;
    double scale = kernel == Kernel::unscaled ? 1.0 : g[t].item<double>();
    grad[t] = scale * kept.to(at::kFloat) * (onehot - probs);
  }
  if (kernel == Kernel::zeros) grad.zero_();
  const int64_t vl = c.inputs[0][0].size(-1);
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < c.run.world; ++r)
    out.push_back({grad.slice(1, r * vl, (r + 1) * vl).reshape(c.inputs[r][0].sizes()).contiguous()});
  return out;
}

TEST(Problem084, HonestKernelsPassWrongOnesFail) {
  for (int world : {2, 3, 4}) {
    for (int trial : {0, 1}) {
      std::map<std::string, int64_t> params;
      if (world == 3) params["V"] = 48;  // CI's vocabulary; 256 is not a multiple of 3
      Case c = make_case(kProblem, world, {.params = params, .trial = trial});
      EXPECT_TRUE(passes(c, run_kernel(c, Kernel::fp32_from_top))) << "W=" << world << " trial " << trial;
      EXPECT_FALSE(passes(c, run_kernel(c, Kernel::zeros))) << "zeros, W=" << world;
      EXPECT_FALSE(passes(c, run_kernel(c, Kernel::no_top_p))) << "no top-p, W=" << world;
      EXPECT_FALSE(passes(c, run_kernel(c, Kernel::unfiltered))) << "unfiltered softmax, W=" << world;
      EXPECT_FALSE(passes(c, run_kernel(c, Kernel::unscaled))) << "grad_output ignored, W=" << world;
    }
  }
}

}  // namespace check_084
