// Sharing GPUs among ranks: how many ranks per GPU, which GPUs a forced share uses, and what the ranks are told.
#include "launch/gpus.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "launch/jobs.h"

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

// reference.py through the gate's flags (PKB_EAGER_GATE=1): asked for only where the libtorch baseline is gated on a
// GPU, and then by the library beside the rank programs.
TEST(EagerGate, ArgumentsOnlyWhereAskedForAndTheBaselineIsGated) {
  unsetenv("PKB_EAGER_GATE");
  EXPECT_TRUE(pkb::eager_gate_args(true).empty());
  setenv("PKB_EAGER_GATE", "1", 1);
  EXPECT_TRUE(pkb::eager_gate_args(false).empty());
  const std::vector<std::string> args = pkb::eager_gate_args(true);
  unsetenv("PKB_EAGER_GATE");
  ASSERT_EQ(args.size(), 2u);
  EXPECT_EQ(args[0], "--gate-lib");
  EXPECT_EQ(std::filesystem::path(args[1]).filename(), "libpkb_eager_gate.so");
}

// The library's C ABI, as run_reference.py loads it with ctypes. Without a GPU no gate opens and the error says why;
// with one (scripts/gpu_check.sh's unit step) a window on the default stream times, and a window past those reserved
// is refused rather than written.
TEST(EagerGate, TheLibraryOpensAGateOrSaysWhyNot) {
  void* lib = dlopen(PKB_EAGER_GATE_LIB, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto sym = [&](const char* name) {
    void* f = dlsym(lib, name);
    EXPECT_NE(f, nullptr) << name;
    return f;
  };
  auto open = reinterpret_cast<void* (*)(int, int)>(sym("pkb_eager_gate_open"));
  auto begin = reinterpret_cast<int (*)(void*, int, void*)>(sym("pkb_eager_gate_begin"));
  auto end = reinterpret_cast<int (*)(void*, int, void*)>(sym("pkb_eager_gate_end"));
  auto elapsed = reinterpret_cast<double (*)(void*, int)>(sym("pkb_eager_gate_elapsed_us"));
  auto error = reinterpret_cast<const char* (*)()>(sym("pkb_eager_gate_error"));
  auto flags = reinterpret_cast<const char* (*)(void*)>(sym("pkb_eager_gate_flags"));
  ASSERT_FALSE(::testing::Test::HasFailure());
  EXPECT_EQ(open(0, -1), nullptr);
  EXPECT_NE(std::string(error()).find("windows -1"), std::string::npos) << error();
  void* gate = open(0, 2);
  if (!gate) {
    EXPECT_NE(std::string(error()).find("cudaSetDevice"), std::string::npos) << error();
    return;
  }
  EXPECT_EQ(std::string(flags(gate)), "write_ops");
  ASSERT_EQ(begin(gate, 1, nullptr), 0) << error();
  ASSERT_EQ(end(gate, 1, nullptr), 0) << error();
  EXPECT_GE(elapsed(gate, 1), 0.0) << error();
  EXPECT_EQ(begin(gate, 2, nullptr), -1);
  EXPECT_NE(std::string(error()).find("window 2 of 2"), std::string::npos) << error();
}
