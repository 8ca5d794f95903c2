// pkb-runner's block of calls (runner::kRunBlock, worker/runner_main.cpp `run_block`) on CPU ranks, where no device
// waits between the calls: one wake makes every call of the block, in order, each on its own slot; rc is the first
// call's that was not 0 and `done` the block's last sequence number; a block whose count or slots do not fit the layout
// is refused (runner::block_error), by the monitor's side before it is written and by a runner that reads one.
// The GPU side (each call behind its go, done after it, armed for the first) runs only on GPU nodes.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "worker/runner_host.h"
#include "worker/runner_protocol.h"

namespace {

namespace fs = std::filesystem;
using pkb::RunnerProcess;
using pkb::protocol::LayoutTensor;
using pkb::protocol::RunnerLayout;

constexpr size_t kHeapBytes = 1 << 20, kLogOffset = 64 * 1024, kSlotOffset = 4096;
constexpr int kSlots = 3, kLogLength = 1024;
constexpr int kI32 = 7;  // PKB_I32

// A heap of one rank (a memfd, as a CPU runtime's is) with kSlots input slots of one int32 each (slot s holds
// 10 + s), an output log of kLogLength int32, and a runner of the fixture library over it.
class RunnerBlock : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = memfd_create("runner-block-test", MFD_CLOEXEC);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(ftruncate(fd_, kHeapBytes), 0);
    void* base = mmap(nullptr, kHeapBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    ASSERT_NE(base, MAP_FAILED);
    heap_ = static_cast<char*>(base);
    for (int s = 0; s < kSlots; ++s) slot_value(s) = 10 + s;
    work_ = fs::temp_directory_path() / ("runner-block-test-" + std::to_string(getpid()));
    fs::create_directories(work_);
    RunnerLayout l;
    l.library = PKB_RUNNER_BLOCK_FIXTURE;
    l.rank = 0, l.world = 1, l.local_rank = 0;
    l.heap_bytes = l.host_bytes = kHeapBytes;
    l.sync_offset = 0, l.arena_offset = 2 * kLogOffset;
    for (int s = 0; s < kSlots; ++s) l.inputs.push_back({LayoutTensor{"x", kI32, {1}, kSlotOffset + 64 * s}});
    l.outputs = {LayoutTensor{"log", kI32, {kLogLength}, kLogOffset}};
    l.granted_paths = {work_.string()};
    runner_ = std::make_unique<RunnerProcess>(PKB_RUNNER_PROGRAM, l, std::vector<int>{fd_}, work_);
    ASSERT_EQ(runner_->loaded().failure, "");
    ASSERT_EQ(runner_->loaded().error, "");
  }
  void TearDown() override {
    runner_.reset();
    if (heap_) munmap(heap_, kHeapBytes);
    if (fd_ >= 0) close(fd_);
    std::error_code ec;
    fs::remove_all(work_, ec);
  }
  int32_t& slot_value(int s) { return *reinterpret_cast<int32_t*>(heap_ + kSlotOffset + 64 * s); }
  std::vector<int32_t> calls_logged() const {
    const auto* log = reinterpret_cast<const int32_t*>(heap_ + kLogOffset);
    return std::vector<int32_t>(log + 1, log + 1 + log[0]);
  }

  int fd_ = -1;
  char* heap_ = nullptr;
  fs::path work_;
  std::unique_ptr<RunnerProcess> runner_;
};

TEST_F(RunnerBlock, OneWakeMakesEveryCallInOrderOnItsSlot) {
  EXPECT_EQ(runner_->next_seq(), 1u);
  RunnerProcess::Outcome o = runner_->call_block({2, 0, 1, 2});
  EXPECT_EQ(o.failure, "");
  EXPECT_EQ(o.rc, 0);
  EXPECT_EQ(calls_logged(), (std::vector<int32_t>{12, 10, 11, 12}));
  EXPECT_EQ(runner_->next_seq(), 5u) << "a block of 4 takes sequence numbers 1 to 4";
  // A call of its own after it, then another block: the sequence goes on.
  EXPECT_EQ(runner_->call(pkb::runner::kRun, 1).failure, "");
  EXPECT_EQ(runner_->call_block({0}).failure, "");
  EXPECT_EQ(calls_logged(), (std::vector<int32_t>{12, 10, 11, 12, 11, 10}));
  EXPECT_EQ(runner_->next_seq(), 7u);
}

TEST_F(RunnerBlock, EveryCallIsMadeAndRcIsTheFirstThatWasNotZero) {
  slot_value(1) = 99;
  RunnerProcess::Outcome o = runner_->call_block({0, 1, 2, 1});
  EXPECT_EQ(o.failure, "");
  EXPECT_EQ(o.rc, 7);
  EXPECT_EQ(calls_logged(), (std::vector<int32_t>{10, 99, 12, 99}));
}

TEST_F(RunnerBlock, ARunnerAskedForASlotThatIsNotThereDies) {
  RunnerProcess::Outcome o = runner_->call_block({0, kSlots});
  EXPECT_NE(o.failure.find("exited"), std::string::npos) << o.failure;
  EXPECT_TRUE(calls_logged().empty()) << "a bad block is refused before any of its calls";
  EXPECT_NE(runner_->call(pkb::runner::kRun, 0).failure, "");
}

TEST_F(RunnerBlock, TheMonitorWritesNoBlockThatCannotFit) {
  EXPECT_THROW(runner_->call_block({}), pkb::Error);
  EXPECT_THROW(runner_->call_block(std::vector<int>(pkb::runner::kMaxBlockCalls + 1, 0)), pkb::Error);
  // The longest block fits the control page and runs.
  EXPECT_EQ(runner_->call_block(std::vector<int>(pkb::runner::kMaxBlockCalls, 2)).failure, "");
}

TEST(RunnerBlockError, CountAndSlotsAgainstTheLayout) {
  using pkb::runner::block_error;
  const int32_t slots[] = {0, 2, 1};
  EXPECT_EQ(block_error(3, slots, 3), "");
  EXPECT_NE(block_error(0, slots, 3), "");
  EXPECT_NE(block_error(-1, slots, 3), "");
  EXPECT_NE(block_error(pkb::runner::kMaxBlockCalls + 1, slots, 3), "");
  EXPECT_NE(block_error(3, slots, 2), "") << "slot 2 of 2";
  const int32_t negative[] = {0, -1};
  EXPECT_NE(block_error(2, negative, 3), "");
  EXPECT_EQ(block_error(1, negative, 3), "") << "only the first `count` slots are read";
}

}  // namespace
