// Problem 82: PKB's +8 target boost leaves the target alone after top-p (outputs ~0, so zeros pass PKB's check);
// ours (+3, prepared rows with every top-p decision 0.01 from the threshold) gives log-probs around -1, passes
// kernels that make the filter's decisions in fp32 (or from the top, by the mass above each candidate), and fails
// zeros and kernels that skip top-p or top-k.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "check_case.h"
#include "reference/vocab_topk.h"

namespace check_082 {  // named, not anonymous: the references build as unity batches

using pkb::vocab_topk::full_rows;

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "082_vocab_parallel_log_prob_topk";

enum class Kernel { fp32_from_top, no_top_p, no_top_k };

// Per token, in fp32 on the bf16 logits: top-k with ties; top-p keeps a candidate while the probability mass
// strictly above it is < top_p (the same set as dropping ascending cumulative sums <= 1 - top_p).
std::vector<pkb::Tensors> run_kernel(const Case& c, Kernel kernel) {
  at::Tensor rows = full_rows(c.inputs).to(at::kFloat), target = c.inputs[0][1].reshape({-1});
  at::Tensor out = at::empty({rows.size(0)}, at::kFloat);
  for (int64_t t = 0; t < rows.size(0); ++t) {
    at::Tensor row = rows[t];
    auto [sorted, order] = row.sort(0, /*descending=*/true);
    int64_t keep = kernel == Kernel::no_top_k ? row.size(0) : row.ge(sorted[9]).sum().item<int64_t>();
    at::Tensor p = at::softmax(sorted.slice(0, 0, keep), 0);
    at::Tensor above = p.cumsum(0) - p;
    at::Tensor kept_sorted = kernel == Kernel::no_top_p ? at::ones({keep}, at::kBool) : above.lt(0.9);
    at::Tensor kept = at::zeros({row.size(0)}, at::kBool);
    kept.index_put_({order.slice(0, 0, keep)}, kept_sorted);
    at::Tensor filtered = row.masked_fill(~kept, -INFINITY);
    out[t] = at::log_softmax(filtered, 0)[target[t].item<int64_t>()];
  }
  return std::vector<pkb::Tensors>(c.run.world, pkb::Tensors{out.view(c.inputs[0][1].sizes())});
}

std::vector<pkb::Tensors> zeros_like(const Case& c) {
  std::vector<pkb::Tensors> out;
  for (const auto& e : c.expected) out.push_back({at::zeros_like(e[0])});
  return out;
}

TEST(Problem082, HonestKernelsPassWrongOnesFail) {
  for (int world : {2, 3, 4}) {
    for (int trial : {0, 1}) {
      std::map<std::string, int64_t> params;
      if (world == 3) params["V"] = 48;  // CI's vocabulary; 256 is not a multiple of 3
      Case c = make_case(kProblem, world, {.params = params, .trial = trial});
      EXPECT_TRUE(passes(c, run_kernel(c, Kernel::fp32_from_top))) << "W=" << world << " trial " << trial;
      EXPECT_FALSE(passes(c, run_kernel(c, Kernel::no_top_p))) << "no top-p, W=" << world;
      EXPECT_FALSE(passes(c, run_kernel(c, Kernel::no_top_k))) << "no top-k, W=" << world;
      EXPECT_FALSE(passes(c, zeros_like(c))) << "zeros, W=" << world;
    }
  }
}

// The data regimes: ours gives log-probs around -1 with some candidates dropped by top-p; PKB's (+8 at the target)
// leaves the target alone, so its outputs are ~0 and zeros pass PKB's allclose.
TEST(Problem082, OursIsNotVacuousPkbsIs) {
  Case c = make_case(kProblem, 2);
  at::Tensor rows = full_rows(c.inputs);
  double dropped = 0;
  for (int64_t t = 0; t < rows.size(0); ++t) {
    auto f = pkb::vocab_topk::filter_exact(pkb::vocab_topk::row_vector(rows, t), 10);
    dropped += 10 - std::count(f.kept.begin(), f.kept.end(), true);
  }
  double mean = c.expected[0][0].mean().item<double>();
  std::printf("prepared rows: mean log-prob %.3f, range [%.3f, %.3f], %.2f of 10 candidates dropped by top-p\n", mean,
              c.expected[0][0].min().item<double>(), c.expected[0][0].max().item<double>(), dropped / rows.size(0));
  EXPECT_LT(mean, -0.3);
  EXPECT_GT(dropped, 0);

  // PKB's regime on 512 rows (32 batches of PKB's 2 x 8 tokens): how many outputs are exactly 0.
  at::manual_seed(82);
  int64_t exact_zero = 0, tokens = 0;
  double largest = 0;
  for (int batch = 0; batch < 32; ++batch) {
    std::vector<pkb::Tensors> pkb_in;
    at::Tensor target = at::randint(0, 256, {2, 8}, at::kLong);
    at::Tensor full = at::randn({2, 8, 256}).to(at::kBFloat16);
    full = full.scatter(-1, target.unsqueeze(-1), full.gather(-1, target.unsqueeze(-1)) + 8);
    for (int r = 0; r < 2; ++r) pkb_in.push_back({full.slice(-1, r * 128, (r + 1) * 128).contiguous(), target});
    at::Tensor out = pkb::expected_outputs(c.spec, c.run, pkb_in)[0][0];
    exact_zero += out.eq(0).sum().item<int64_t>();
    tokens += out.numel();
    largest = std::max(largest, out.abs().max().item<double>());
  }
  std::printf("PKB's regime: %lld of %lld outputs exactly 0, largest |log-prob| %.4f\n",
              static_cast<long long>(exact_zero), static_cast<long long>(tokens), largest);
  EXPECT_GT(exact_zero, tokens * 9 / 10) << "PKB's outputs are nearly all exactly 0";
}

}  // namespace check_082
