// Problem 65: the rotation is the one convention two kernels can disagree on. A kernel that fetches each block
// straight from its source rank passes; a plain all-to-all (block i to rank i, output block c from rank c) and a
// rotation the wrong way round (block i to rank (s - i) mod W) move the right rows to the wrong places and fail.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_065 {  // named, not anonymous: the references build as unity batches

enum class Convention { rotated, plain, rotated_backwards };

// out_r[block c] from the source rank and block the convention names.
std::vector<pkb::Tensors> candidate(const std::vector<pkb::Tensors>& in, Convention conv) {
  const int W = static_cast<int>(in.size());
  std::vector<pkb::Tensors> out;
  for (int r = 0; r < W; ++r) {
    const int64_t R = in[r][1].size(0) / W;
    std::vector<at::Tensor> blocks;
    for (int c = 0; c < W; ++c) {
      int s = (r + c) % W, block = (W - c) % W;
      if (conv == Convention::plain) s = c, block = r;
      if (conv == Convention::rotated_backwards) s = (r - c + W) % W, block = c;
      blocks.push_back(in[s][0].index_select(0, in[s][1].slice(0, block * R, (block + 1) * R)));
    }
    out.push_back({at::cat(blocks)});
  }
  return out;
}

bool passes(const pkb::ProblemSpec& s, const std::vector<pkb::Tensors>& got, const std::vector<pkb::Tensors>& want) {
  for (size_t r = 0; r < got.size(); ++r)
    if (!pkb::compare(pkb::Policy::robust, got[r][0], want[r][0], s.tolerance, got[r][0].scalar_type()).pass)
      return false;
  return true;
}

TEST(Problem065, RotatedConventionPassesOthersFail) {
  auto s = pkb::load_problem(pkb::repo_root() / "problems/065_gnn_feature_exchange_all2all");
  for (int W : {3, 4}) {
    auto run = pkb::resolve_run(s, W, pkb::DType::bf16, s.test_parameters);
    std::vector<pkb::Tensors> in;
    for (int r = 0; r < W; ++r) in.push_back(pkb::make_inputs(s, run, r, 0, 0).tensors);
    auto want = pkb::expected_outputs(s, run, in);
    EXPECT_TRUE(passes(s, candidate(in, Convention::rotated), want)) << "W=" << W;
    EXPECT_FALSE(passes(s, candidate(in, Convention::plain), want)) << "plain all-to-all, W=" << W;
    EXPECT_FALSE(passes(s, candidate(in, Convention::rotated_backwards), want)) << "rotated backwards, W=" << W;
  }
}

}  // namespace check_065
