// The runner's layout (protocol/runner_layout.h): what the monitor writes reads back as the same struct, and a layout
// that lacks a key or holds the wrong type is refused, naming the key (never read as 0).
#include "protocol/runner_layout.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace {

using pkb::protocol::RunnerLayout;
using json = nlohmann::json;

RunnerLayout full_layout() {
  RunnerLayout l;
  l.library = "/work/candidate.so";
  l.rank = 1, l.world = 2, l.local_rank = 1;
  l.heap_bytes = 1 << 20, l.sync_offset = 256, l.arena_offset = 4096, l.host_bytes = 8192;
  l.cuda = pkb::protocol::RunnerCuda{0, "00ff", 512, 1024, 2048, "stream_memory_ops"};
  l.inputs = {{{"tensor", 3, {64, 48}, 4096}}, {{"tensor", 3, {64, 48}, 10240}}};
  l.outputs = {{"out", 3, {64, 48}, 16384}};
  l.params = {{"M", 64}, {"N", 48}};
  l.groups = {{"tp", {0, 1}}};
  l.hidden_paths = {"/tmp", "/proc"};
  l.granted_paths = {"/work/runner1"};
  return l;
}

TEST(RunnerLayout, RoundTripsThroughJson) {
  const RunnerLayout l = full_layout();
  EXPECT_EQ(json::parse(json(l).dump()).get<RunnerLayout>(), l);
  RunnerLayout cpu = l;
  cpu.cuda.reset();
  EXPECT_EQ(json(cpu).get<RunnerLayout>(), cpu);
  const RunnerLayout ping{.ping_only = true};
  EXPECT_EQ(json(ping).get<RunnerLayout>(), ping);
}

TEST(RunnerLayout, AMissingOrMistypedKeyIsRefusedByName) {
  json j = full_layout();
  j.erase("arena_offset");
  try {
    (void)j.get<RunnerLayout>();
    FAIL() << "a layout without arena_offset parsed";
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"arena_offset\""), std::string::npos) << e.what();
  }
  json typed = full_layout();
  typed["cuda"]["gate_offset"] = "not a number";
  try {
    (void)typed.get<RunnerLayout>();
    FAIL() << "a mistyped gate_offset parsed";
  } catch (const pkb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"gate_offset\""), std::string::npos) << e.what();
  }
}

}  // namespace
