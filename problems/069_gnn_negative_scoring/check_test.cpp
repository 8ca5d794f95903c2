// Problem 69's acceptance rule for ties: prepared scores keep every negative's sigmoid two bf16 steps from its
// positive's, so bf16 and fp32 sigmoids, raw-score comparisons and a >= rule all give the oracle's integers, while
// 0-based and ascending ranks fail. On PKB's raw draws the bf16 and fp32 sigmoids disagree (ties are frequent).
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_069 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::on_every_rank;
using pkb::check_test::passes;

constexpr const char* kProblem = "069_gnn_negative_scoring";

enum class Kernel { bf16_sigmoid, fp32_sigmoid, raw_scores, greater_equal, zero_based, ascending };

// Ranks of the rows (positive in column 0) of `scores`, as the kernel computes them.
at::Tensor ranks_of(const at::Tensor& scores, Kernel k) {
  at::Tensor s = k == Kernel::bf16_sigmoid ? at::sigmoid(scores)
                 : k == Kernel::raw_scores ? scores.to(at::kFloat)
                                           : at::sigmoid(scores.to(at::kFloat));
  at::Tensor neg = s.slice(1, 1), pos = s.slice(1, 0, 1);
  at::Tensor count = k == Kernel::greater_equal ? neg.ge(pos).sum(1)
                     : k == Kernel::ascending   ? neg.lt(pos).sum(1)
                                                : neg.gt(pos).sum(1);
  return k == Kernel::zero_based ? count : 1 + count;
}

at::Tensor all_rows(const std::vector<pkb::Tensors>& in) {
  std::vector<at::Tensor> rows;
  for (const auto& r : in) rows.push_back(at::cat({r[0].unsqueeze(1), r[1]}, 1));
  return at::cat(rows);
}

TEST(Problem069, EveryHonestFormulationPassesMistakesFail) {
  for (int world : {2, 3}) {
    Case c = make_case(kProblem, world);
    at::Tensor scores = all_rows(c.inputs);
    for (Kernel k : {Kernel::bf16_sigmoid, Kernel::fp32_sigmoid, Kernel::raw_scores, Kernel::greater_equal})
      EXPECT_TRUE(passes(c, on_every_rank(c, {ranks_of(scores, k)})))
          << "honest kernel " << static_cast<int>(k) << " W=" << world;
    EXPECT_FALSE(passes(c, on_every_rank(c, {ranks_of(scores, Kernel::zero_based)}))) << "0-based ranks";
    EXPECT_FALSE(passes(c, on_every_rank(c, {ranks_of(scores, Kernel::ascending)}))) << "ascending order";
  }
}

// Without the prepared margins (PKB's raw N(0, 1) bf16 draws), bf16 and fp32 sigmoids, and > and >=, disagree.
TEST(Problem069, RawDrawsMakeTheRanksTieDependent) {
  at::manual_seed(69);
  at::Tensor scores = at::randn({1024, 1001}).to(at::kBFloat16);
  at::Tensor bf16 = ranks_of(scores, Kernel::bf16_sigmoid), fp32 = ranks_of(scores, Kernel::fp32_sigmoid);
  EXPECT_GT(bf16.ne(fp32).sum().item<int64_t>(), 10);
  EXPECT_GT(bf16.ne(ranks_of(scores, Kernel::greater_equal)).sum().item<int64_t>(), 10);
}

}  // namespace check_069
