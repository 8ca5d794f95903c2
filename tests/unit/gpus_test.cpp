// Sharing GPUs among ranks: how many ranks per GPU, which GPUs a forced share uses, and what the ranks are told.
#include "launch/gpus.h"

#include <gtest/gtest.h>

namespace {}  // namespace

TEST(GpuSharing, EnoughGpusMeansNoSharing) {
  pkb::GpuSharing s = pkb::plan_gpu_sharing(2, 2);
  EXPECT_EQ(s.ranks_per_gpu, 1);
  EXPECT_TRUE(s.env.empty());
  EXPECT_TRUE(s.note.empty());
}

TEST(GpuSharing, MoreRanksThanGpusShareRoundRobinWithTheirShareOfTheSms) {
  pkb::GpuSharing s = pkb::plan_gpu_sharing(8, 2);
  EXPECT_EQ(s.ranks_per_gpu, 4);
  EXPECT_NE(s.note.find("4 ranks share each GPU"), std::string::npos) << s.note;
  if (s.mps)
    EXPECT_EQ(s.env.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
  else
    EXPECT_NE(s.note.find("time-sliced"), std::string::npos) << s.note;  // no MPS here: says so
  EXPECT_EQ(s.env.count("CUDA_VISIBLE_DEVICES"), 0u);                    // every GPU is used
}

TEST(GpuSharing, ForcedSharingUsesOnlyTheGpusItsRanksFill) {
  std::vector<std::string> ids = {"3", "5", "6", "7"};
  EXPECT_EQ(pkb::gpus_filled(ids, 4, 2), "3,5");  // --ranks-per-gpu 2: 4 ranks on 2 of the 4 GPUs
  EXPECT_EQ(pkb::gpus_filled(ids, 3, 2), "3,5");  // 3 ranks, 2 per GPU: still 2 GPUs
  EXPECT_EQ(pkb::gpus_filled(ids, 8, 4), "3,5");
  EXPECT_EQ(pkb::gpus_filled(ids, 2, 1), "3,5");
  EXPECT_EQ(pkb::gpus_filled({"0"}, 8, 8), "0");
  pkb::GpuSharing s = pkb::plan_gpu_sharing(4, 4, 2);  // forced on a machine that has the GPUs
  EXPECT_EQ(s.ranks_per_gpu, 2);
  EXPECT_NE(s.note.find("2 ranks share each GPU"), std::string::npos) << s.note;
}
