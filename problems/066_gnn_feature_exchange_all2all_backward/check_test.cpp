// Problem 66: the sums are keyed by the receiver's ids after the rotated exchange. A scatter in another order
// (rows added in reverse, as atomics may) passes; a plain all-to-all, the sender's ids, and a scatter that keeps
// only the last row of each seed fail.
#include <gtest/gtest.h>

#include "problems/check_case.h"

namespace check_066 {  // named, not anonymous: the references build as unity batches

enum class Mistake { none, plain_all_to_all, sender_ids, last_row_wins };

std::vector<pkb::Tensors> candidate(const std::vector<pkb::Tensors>& in, int64_t seeds, Mistake mistake) {
  const int W = static_cast<int>(in.size());
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) {
    const int64_t R = in[r][1].size(0) / W;
    std::vector<at::Tensor> blocks, ids;
    for (int c = 0; c < W; ++c) {
      int s = (r + c) % W, block = (W - c) % W;
      if (mistake == Mistake::plain_all_to_all) s = c, block = r;
      blocks.push_back(in[s][0].slice(0, block * R, (block + 1) * R));
      ids.push_back(in[mistake == Mistake::sender_ids ? s : r][1].slice(0, c * R, (c + 1) * R));
    }
    at::Tensor rows = at::cat(blocks), id = at::cat(ids);
    at::Tensor o = at::zeros({seeds, rows.size(1)}, at::kFloat);
    if (mistake == Mistake::last_row_wins) {
      o.index_copy_(0, id, rows);
    } else {
      o.index_add_(0, id.flip(0), rows.flip(0));  // reverse order of additions
    }
    out.push_back({o});
  }
  return out;
}

TEST(Problem066, ReceiverKeyedSegmentSumPassesMistakesFail) {
  for (int W : {3, 4}) {
    auto c = pkb::check_test::make_case("066_gnn_feature_exchange_all2all_backward", W, {.small = true, .seed = 0});
    const auto& in = c.inputs;
    auto ctx = pkb::oracle_context(c.spec, c.run);
    const int64_t seeds = ctx.scalar("seed_size");
    EXPECT_TRUE(pkb::check_test::passes(c, candidate(in, seeds, Mistake::none))) << "W=" << W;
    EXPECT_FALSE(pkb::check_test::passes(c, candidate(in, seeds, Mistake::plain_all_to_all)))
        << "plain all-to-all, W=" << W;
    EXPECT_FALSE(pkb::check_test::passes(c, candidate(in, seeds, Mistake::sender_ids))) << "sender's ids, W=" << W;
    EXPECT_FALSE(pkb::check_test::passes(c, candidate(in, seeds, Mistake::last_row_wins))) << "no reduction, W=" << W;
  }
}

}  // namespace check_066
