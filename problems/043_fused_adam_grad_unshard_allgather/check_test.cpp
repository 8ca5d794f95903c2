// Problem 43's update (~1e-3) is below PKB's atol, so PKB's check of the gathered parameters passes a kernel that
// never updates them. With the update as a checked output (atol = 0) and non-zero optimizer state, an accurate
// fp32 step passes and skipped, sign-flipped, uncorrected or zero-state steps fail. Checked through check_outputs.
#include <gtest/gtest.h>

#include <cmath>

#include "check_case.h"

namespace check_043 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "043_fused_adam_grad_unshard_allgather";

struct Step {
  double sign = 1;
  bool bias_correction = true, zero_state = false, reverse_gather = false;
};

std::vector<pkb::Tensors> adam_fp32(const Case& c, const Step& s) {
  const int W = c.run.world, step = 3;
  const double bc1 = s.bias_correction ? 1 - std::pow(0.9, step) : 1,
               bc2 = s.bias_correction ? 1 - std::pow(0.999, step) : 1;
  std::vector<at::Tensor> shards, updates;
  for (const auto& r : c.inputs) {
    at::Tensor g = r[0].to(at::kFloat);
    at::Tensor m = 0.9 * (s.zero_state ? at::zeros_like(g) : r[2].to(at::kFloat)) + 0.1 * g;
    at::Tensor v = 0.999 * (s.zero_state ? at::zeros_like(g) : r[3].to(at::kFloat)) + 0.001 * g * g;
    at::Tensor u = s.sign * -1e-3 * (m / bc1) / ((v / bc2).sqrt() + 1e-8);
    shards.push_back(r[1].to(at::kFloat) + u);
    updates.push_back(u.to(at::kBFloat16));
  }
  if (s.reverse_gather) std::reverse(shards.begin(), shards.end());
  at::Tensor params = at::cat(shards).to(at::kBFloat16);
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) out.push_back({params, updates[r]});
  return out;
}

TEST(Problem043, AccurateStepPassesWrongStepsFail) {
  for (int world : {1, 2, 4}) {
    Case c = make_case(kProblem, world);
    EXPECT_TRUE(passes(c, adam_fp32(c, {}))) << "fp32 step, W=" << world;
    EXPECT_FALSE(passes(c, adam_fp32(c, {0}))) << "no update";
    EXPECT_FALSE(passes(c, adam_fp32(c, {-1}))) << "update with the wrong sign";
    EXPECT_FALSE(passes(c, adam_fp32(c, {1, false}))) << "no bias correction";
    EXPECT_FALSE(passes(c, adam_fp32(c, {1, true, true}))) << "optimizer state assumed zero";
    if (world > 1) {
      EXPECT_FALSE(passes(c, adam_fp32(c, {1, true, false, true}))) << "shards gathered in the wrong order";
    }
  }
}

// Why the update is an output: PKB's allclose on the gathered parameters cannot see a skipped update.
TEST(Problem043, SkippedUpdateIsInvisibleToPkbsParameterCheck) {
  Case c = make_case(kProblem, 2);
  auto skipped = adam_fp32(c, {0});
  EXPECT_TRUE(
      pkb::compare(pkb::Policy::paper_allclose, skipped[0][0], c.expected[0][0], pkb::Tolerance{}, at::kBFloat16).pass);
}

}  // namespace check_043
