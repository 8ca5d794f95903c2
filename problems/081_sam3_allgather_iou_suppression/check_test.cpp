// Problem 81: the prepared masks and last_occluded make objects suppressed at W = 2, 3, 4, through pairs that span
// ranks; PKB's inputs suppress nothing. A kernel with an integer IoU test passes; kernels without suppression, with
// only the pairs of one rank's own objects, or with the rule reversed fail.
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_081 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "081_sam3_allgather_iou_suppression";

enum class Kernel { integer_iou, no_suppression, own_rank_pairs, reversed };

std::vector<pkb::Tensors> run_kernel(const Case& c, Kernel kernel) {
  std::vector<at::Tensor> masks, scores, owner;
  for (int r = 0; r < c.run.world; ++r) {
    masks.push_back(c.inputs[r][0].to(at::kFloat));
    scores.push_back(c.inputs[r][1].to(at::kFloat));
    owner.push_back(at::full({c.inputs[r][0].size(0)}, r, at::kLong));
  }
  at::Tensor all = at::cat(masks), rank_of = at::cat(owner);
  at::Tensor m = all.flatten(1).gt(0).to(at::kLong);
  at::Tensor inter = at::mm(m.to(at::kDouble), m.to(at::kDouble).t()).to(at::kLong), area = m.sum(1);
  at::Tensor uni = (area.unsqueeze(1) + area.unsqueeze(0) - inter).clamp_min(1);
  at::Tensor pair = (inter * 10).ge(uni * 7) & ~at::eye(all.size(0), at::kBool);  // IoU >= 0.7 in integers
  if (kernel == Kernel::own_rank_pairs) pair &= rank_of.unsqueeze(1).eq(rank_of.unsqueeze(0));
  const at::Tensor& last = c.inputs[0][3];
  at::Tensor newer =
      kernel == Kernel::reversed ? last.unsqueeze(1).lt(last.unsqueeze(0)) : last.unsqueeze(1).gt(last.unsqueeze(0));
  at::Tensor suppress = (pair & newer & last.unsqueeze(0).gt(-1)).any(1);
  if (kernel == Kernel::no_suppression) suppress.zero_();
  all = all.masked_fill(suppress.view({-1, 1, 1}), -10.0);
  return std::vector<pkb::Tensors>(c.run.world, pkb::Tensors{all, at::cat(scores), suppress});
}

TEST(Problem081, SuppressionHappensAcrossRanks) {
  for (int world : {2, 3, 4}) {
    Case c = make_case(kProblem, world, {.small = true});
    EXPECT_GT(c.expected[0][2].sum().item<int64_t>(), 0) << "something is suppressed, W=" << world;
    EXPECT_TRUE(passes(c, run_kernel(c, Kernel::integer_iou))) << "W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::no_suppression))) << "no suppression, W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::own_rank_pairs))) << "own rank's pairs only, W=" << world;
    EXPECT_FALSE(passes(c, run_kernel(c, Kernel::reversed))) << "reversed rule, W=" << world;
  }
}

// PKB's inputs: z + 4 [(y + x + i + r) mod 5 == 0] - 1 and last_occluded (j mod 5) - 1: nothing is suppressed.
TEST(Problem081, PkbInputsSuppressNothing) {
  Case c = make_case(kProblem, 8, {.small = true});
  at::manual_seed(81);
  std::vector<pkb::Tensors> pkb_in;
  int64_t total = 0;
  for (int r = 0; r < 8; ++r) total += 1 + r % 3;
  at::Tensor last = at::arange(total, at::kLong).remainder(5) - 1;
  at::Tensor diagonal = at::arange(256, at::kLong).unsqueeze(1) + at::arange(256, at::kLong).unsqueeze(0);
  for (int r = 0; r < 8; ++r) {
    std::vector<at::Tensor> objects;
    for (int i = 0; i < 1 + r % 3; ++i)
      objects.push_back((
          (at::randn({256, 256}).to(at::kBFloat16) + (diagonal + i + r).remainder(5).eq(0).to(at::kBFloat16) * 4) - 1));
    pkb_in.push_back({at::stack(objects), at::linspace(-5, 5, 1 + r % 3).to(at::kBFloat16),
                      at::arange(8, at::kLong).remainder(3) + 1, last});
  }
  auto out = pkb::expected_outputs(c.spec, pkb::resolve_run(c.spec, 8, pkb::DType::bf16), pkb_in);
  EXPECT_EQ(out[0][2].sum().item<int64_t>(), 0);
}

}  // namespace check_081
