// Problem 10 returns rows in owner-grouped order (indices stably partitioned by owner), not query order. The rows
// are exact copies, so the check is exact in practice; these tests pin down the order: the same rows in query
// order, or sorted by index, fail.
#include <gtest/gtest.h>

#include "check/compare.h"
#include "check/expected.h"
#include "inputs/inputs.h"
#include "reference/reference.h"
#include "spec/catalog.h"

namespace {

struct Case {
  pkb::ProblemSpec spec;
  std::vector<pkb::Tensors> inputs;    // [rank] = {indices, local_shard}
  std::vector<pkb::Tensors> expected;  // [rank] = {out}, from the oracle
  at::Tensor table;                    // all shards stacked
};

Case make_case(int world) {
  Case c;
  c.spec = pkb::load_problem(pkb::repo_root() / "problems/010_embedding_lookup");
  pkb::RunShape run = pkb::resolve_run(c.spec, world, pkb::DType::bf16);
  std::vector<at::Tensor> shards;
  for (int r = 0; r < world; ++r) {
    c.inputs.push_back(pkb::make_inputs(c.spec, run, r, 0, 1).tensors);
    shards.push_back(c.inputs.back()[1]);
  }
  c.table = at::cat(shards);
  c.expected = pkb::expected_outputs(c.spec, run, c.inputs);
  return c;
}

bool passes(const Case& c, int rank, const at::Tensor& out) {
  return pkb::compare(pkb::Policy::robust, out, c.expected[rank][0], c.spec.tolerance, at::kBFloat16).pass;
}

TEST(EmbeddingLookupCheck, OwnerGroupedOrderPassesOtherOrdersFail) {
  for (int world : {2, 4}) {
    Case c = make_case(world);
    int64_t rows_per_shard = c.inputs[0][1].size(0);
    for (int r = 0; r < world; ++r) {
      const at::Tensor& idx = c.inputs[r][0];
      // A stable sort by owner is the expected order.
      at::Tensor owner_order = std::get<1>(at::sort(at::div(idx, rows_per_shard, c10::string_view("floor")),
                                                    /*stable=*/true, /*dim=*/0, /*descending=*/false));
      EXPECT_TRUE(passes(c, r, c.table.index_select(0, idx.index_select(0, owner_order)))) << "W=" << world;
      EXPECT_FALSE(passes(c, r, c.table.index_select(0, idx))) << "query order, W=" << world;
      EXPECT_FALSE(passes(c, r, c.table.index_select(0, std::get<0>(at::sort(idx))))) << "sorted by index, W=" << world;
    }
  }
}

}  // namespace
