// Problem 67: within a source, entries must keep their original order. A kernel that scatters every entry to
// its slot from prefix counts (position = entries of the same owner before it) passes; an unstable partition
// (entries of an owner sorted by id) fails.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace check_067 {  // named, not anonymous: the references build as unity batches

enum class Order { prefix_scatter, sorted_within_owner };

std::vector<pkb::Tensors> candidate(const std::vector<pkb::Tensors>& in, Order order) {
  const int W = static_cast<int>(in.size());
  // ids[q], rows[q]: what each source sends owner q, in source order.
  std::vector<std::vector<at::Tensor>> ids(W), rows(W);
  for (int s = 0; s < W; ++s) {
    at::Tensor owner = in[s][0].remainder(W);
    for (int q = 0; q < W; ++q) {
      at::Tensor pos = owner.eq(q).nonzero().squeeze(1);  // ascending = original order
      if (order == Order::sorted_within_owner)
        pos = pos.index_select(0, std::get<1>(in[s][0].index_select(0, pos).sort()));
      ids[q].push_back(in[s][0].index_select(0, pos));
      rows[q].push_back(in[s][1].index_select(0, pos));
    }
  }
  std::vector<pkb::Tensors> out;
  for (int q = 0; q < W; ++q) out.push_back({at::cat(ids[q]), at::cat(rows[q])});
  return out;
}

bool passes(const pkb::ProblemSpec& s, const std::vector<pkb::Tensors>& got, const std::vector<pkb::Tensors>& want) {
  for (size_t r = 0; r < got.size(); ++r)
    for (int i = 0; i < 2; ++i)
      if (!pkb::compare(pkb::Policy::robust, got[r][i], want[r][i], s.tolerance, got[r][i].scalar_type()).pass)
        return false;
  return true;
}

TEST(Problem067, StableRoutingPassesUnstableFails) {
  auto s = pkb::load_problem(pkb::repo_root() / "problems/067_gnn_sparse_embedding_all2all");
  for (int W : {2, 3, 4}) {
    auto run = pkb::resolve_run(s, W, pkb::DType::bf16, s.test_parameters);
    std::vector<pkb::Tensors> in;
    for (int r = 0; r < W; ++r) in.push_back(pkb::make_inputs(s, run, r, 0, 0).tensors);
    auto want = pkb::expected_outputs(s, run, in);
    EXPECT_TRUE(passes(s, candidate(in, Order::prefix_scatter), want)) << "W=" << W;
    EXPECT_FALSE(passes(s, candidate(in, Order::sorted_within_owner), want)) << "unstable, W=" << W;
  }
}

}  // namespace check_067
