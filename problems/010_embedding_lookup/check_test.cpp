// Problem 10 returns rows in owner-grouped order (indices stably partitioned by owner), not query order. The rows
// are exact copies, so the check is exact in practice; these tests pin down the order: the same rows in query
// order, or sorted by index, fail.
#include <gtest/gtest.h>

#include "check_case.h"

namespace check_010 {  // named, not anonymous: the references build as unity batches

using pkb::check_test::Case;
using pkb::check_test::make_case;
using pkb::check_test::passes;

constexpr const char* kProblem = "010_embedding_lookup";  // inputs {indices, local_shard}, output {out}

TEST(EmbeddingLookupCheck, OwnerGroupedOrderPassesOtherOrdersFail) {
  for (int world : {2, 4}) {
    Case c = make_case(kProblem, world);
    std::vector<at::Tensor> shards;
    for (const auto& rank_inputs : c.inputs) shards.push_back(rank_inputs[1]);
    at::Tensor table = at::cat(shards);  // all shards stacked
    int64_t rows_per_shard = c.inputs[0][1].size(0);
    for (int r = 0; r < world; ++r) {
      const at::Tensor& idx = c.inputs[r][0];
      // A stable sort by owner is the expected order.
      at::Tensor owner_order = std::get<1>(at::sort(at::div(idx, rows_per_shard, c10::string_view("floor")),
                                                    /*stable=*/true, /*dim=*/0, /*descending=*/false));
      EXPECT_TRUE(passes(c, r, 0, table.index_select(0, idx.index_select(0, owner_order)))) << "W=" << world;
      EXPECT_FALSE(passes(c, r, 0, table.index_select(0, idx))) << "query order, W=" << world;
      EXPECT_FALSE(passes(c, r, 0, table.index_select(0, std::get<0>(at::sort(idx)))))
          << "sorted by index, W=" << world;
    }
  }
}

}  // namespace check_010
