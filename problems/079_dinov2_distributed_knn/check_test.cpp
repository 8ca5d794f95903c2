// Problem 79's acceptance rule for ties: with the prepared (quantised) features every similarity is exact in fp32 and
// all of a query's similarities are distinct, so honest kernels (another GEMM order, another tie-break, a one-shot
// selection over all items) return the same values and labels; PKB-style data (normalised randn, bf16 similarities)
// has ties at the top-K cut-off. Wrong kernels (bf16 similarities, local shard only, local labels) fail.
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_079 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "079_dinov2_distributed_knn";

int64_t top_k(const Case& c) { return c.run.params.at("K"); }

enum class Kernel { one_shot_low_index, merged_high_index, bf16_sims, local_only, local_labels };

// Every rank's (sims, labels) as a single-process kernel computes them.
std::vector<pkb::Tensors> run_kernel(const Case& c, Kernel kernel) {
  const int W = c.run.world;
  std::vector<at::Tensor> train, labels;
  for (const auto& r : c.inputs) {
    train.push_back(r[1].to(at::kFloat));
    labels.push_back(r[2][0]);
  }
  at::Tensor all_train = at::cat(train, 1), all_labels = at::cat(labels);
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) {
    at::Tensor q = c.inputs[r][0].to(at::kFloat);
    at::Tensor sims, lab;
    if (kernel == Kernel::one_shot_low_index || kernel == Kernel::bf16_sims) {
      // One GEMM over all items, summed over D in reverse order; a stable sort prefers the lower index on ties.
      at::Tensor s = at::zeros({q.size(0), all_train.size(1)}, at::kFloat);
      for (int64_t d = q.size(1) - 1; d >= 0; --d) s += q.select(1, d).unsqueeze(1) * all_train[d].unsqueeze(0);
      if (kernel == Kernel::bf16_sims) s = s.to(at::kBFloat16).to(at::kFloat);
      auto [sorted, order] = at::sort(s, /*stable=*/true, 1, /*descending=*/true);
      sims = sorted.slice(1, 0, top_k(c));
      at::Tensor top = order.slice(1, 0, top_k(c));
      lab = all_labels.index_select(0, top.reshape(-1)).view_as(top);
    } else {
      // Local top-K per shard, then a merge that prefers the later candidate (higher rank) on ties.
      std::vector<at::Tensor> values, cand_labels;
      for (int q2 = 0; q2 < W; ++q2) {
        if (kernel == Kernel::local_only && q2 != r) continue;
        auto [v, i] = at::mm(q, train[q2]).topk(top_k(c), 1);
        values.push_back(v);
        at::Tensor source = kernel == Kernel::local_labels ? labels[r] : labels[q2];
        cand_labels.push_back(source.index_select(0, i.reshape(-1)).view_as(i));
      }
      at::Tensor v = at::cat(values, 1).flip(1), l = at::cat(cand_labels, 1).flip(1);
      auto [sorted, order] = at::sort(v, /*stable=*/true, 1, /*descending=*/true);
      sims = sorted.slice(1, 0, top_k(c));
      lab = l.gather(1, order.slice(1, 0, top_k(c)));
    }
    out.push_back({sims.contiguous(), lab.contiguous()});
  }
  return out;
}

TEST(Problem079, PreparedSimilaritiesAreDistinctPkbStyleOnesTie) {
  Case c = make_case(kProblem, 2);
  std::vector<at::Tensor> train;
  for (const auto& r : c.inputs) train.push_back(r[1].to(at::kDouble));
  at::Tensor all_train = at::cat(train, 1);
  for (int r = 0; r < 2; ++r) {
    at::Tensor s = at::mm(c.inputs[r][0].to(at::kDouble), all_train);
    at::Tensor sorted = std::get<0>(s.sort(1));
    EXPECT_EQ(sorted.diff(1, 1).eq(0).sum().item<int64_t>(), 0) << "no two items of a query tie, rank " << r;
  }
  // PKB's data: L2-normalised randn rows in bf16, similarities rounded to bf16.
  at::manual_seed(79);
  auto normalised = [](at::Tensor x) { return (x / x.norm(2, {1}, true)).to(at::kBFloat16); };
  at::Tensor queries = normalised(at::randn({32, 384})), items = normalised(at::randn({16384, 384}));
  at::Tensor sims = at::mm(queries.to(at::kFloat), items.to(at::kFloat).t()).to(at::kBFloat16);
  at::Tensor top = std::get<0>(sims.topk(201, 1));
  int64_t boundary_ties = top.select(1, 199).eq(top.select(1, 200)).sum().item<int64_t>();
  EXPECT_GT(boundary_ties, 0) << "PKB-style data ties at the cut-off for some queries";
}

TEST(Problem079, HonestKernelsPassWrongOnesFail) {
  for (int world : {2, 3, 4}) {
    const std::map<std::string, int64_t> ci_shapes = {{"Q", 5}, {"D", 20}, {"K", 7}, {"T", 48}, {"LMIN", 8}};
    Case c = make_case(kProblem, world, {.params = ci_shapes, .trial = 1});
    std::string why;
    EXPECT_TRUE(passes(c, run_kernel(c, Kernel::one_shot_low_index), &why)) << "W=" << world << " " << why;
    EXPECT_TRUE(passes(c, run_kernel(c, Kernel::merged_high_index), &why)) << "W=" << world << " " << why;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::bf16_sims))) << "bf16 similarities, W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::local_only))) << "own shard only, W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::local_labels))) << "labels from the wrong shard, W=" << world;
  }
  Case full = make_case(kProblem, 2);
  EXPECT_TRUE(passes(full, run_kernel(full, Kernel::merged_high_index))) << "default shapes";
  EXPECT_FALSE(passes(full, run_kernel(full, Kernel::bf16_sims))) << "bf16 similarities, default shapes";
}

}  // namespace check_079
