// core/dispatch_pin: which CPU a rank's dispatching thread takes, that the process's other threads leave it, that
// every mask comes back, and that run_reference.py (the PyTorch-eager baseline's timer) applies the plan pkb gives it.
#include "core/dispatch_pin.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/parallel.h"
#include "test_util.h"

namespace fs = std::filesystem;
using Cores = std::vector<std::vector<int>>;

namespace {

// A sysfs cpu directory where each group of `cores` is one physical core (its CPUs SMT siblings).
void write_topology(const fs::path& sys_cpu, const Cores& cores) {
  for (const auto& core : cores) {
    std::string list;
    for (int c : core) list += (list.empty() ? "" : ",") + std::to_string(c);
    for (int c : core) {
      fs::create_directories(sys_cpu / ("cpu" + std::to_string(c)) / "topology");
      std::ofstream(sys_cpu / ("cpu" + std::to_string(c)) / "topology" / "thread_siblings_list") << list << "\n";
    }
  }
}

std::vector<int> mask_of(pid_t tid) {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(tid, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

pid_t this_tid() { return static_cast<pid_t>(syscall(SYS_gettid)); }

TEST(DispatchPin, CpuListsParseAsTheKernelWritesThem) {
  EXPECT_EQ(pkb::parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(pkb::parse_cpu_list("5"), std::vector<int>{5});
  EXPECT_TRUE(pkb::parse_cpu_list("").empty());
  EXPECT_TRUE(pkb::parse_cpu_list("3-1").empty());
  EXPECT_TRUE(pkb::parse_cpu_list("1,x").empty());
  EXPECT_TRUE(pkb::parse_cpu_list("2-").empty());
}

TEST(DispatchPin, SiblingsFormOneCoreAndEachRankTakesItsOwnFromTheLast) {
  pkb::test::TempDir tmp;
  write_topology(tmp.path(), {{0, 4}, {1, 5}, {2, 6}, {3, 7}});
  const Cores all = pkb::physical_cores({0, 1, 2, 3, 4, 5, 6, 7}, tmp.path());
  EXPECT_EQ(all, (Cores{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(pkb::dispatch_cores(all, 1), (Cores{{3, 7}}));
  EXPECT_EQ(pkb::dispatch_cores(all, 2), (Cores{{3, 7}, {2, 6}}));
  EXPECT_TRUE(pkb::dispatch_cores(all, 3).empty()) << "3 ranks would take 3 of 4 cores";
  // Only the allowed CPUs count, and a CPU without a topology file is a core of its own.
  EXPECT_EQ(pkb::physical_cores({0, 1, 4}, tmp.path()), (Cores{{0, 4}, {1}}));
  EXPECT_EQ(pkb::physical_cores({2, 9}, tmp.path()), (Cores{{2}, {9}}));
  EXPECT_EQ(pkb::physical_cores({0, 1}, tmp.path() / "missing"), (Cores{{0}, {1}}));
}

// The live pin on this machine's CPUs, with a topology where every CPU is a core (this needs 2 CPUs; CI has 2).
TEST(DispatchPin, OtherThreadsLeaveTheDispatchCoreAndEveryMaskComesBack) {
  const std::vector<int> allowed = pkb::allowed_cpus();
  if (allowed.size() < 2) GTEST_SKIP() << "one allowed CPU: nothing to pin to";
  pkb::test::TempDir no_topology;
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  std::atomic<pid_t> helper_tid{0};
  std::thread helper([&] {
    helper_tid = this_tid();
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return release; });
  });
  while (!helper_tid) std::this_thread::yield();
  const std::vector<int> rest(allowed.begin(), allowed.end() - 1);
  {
    pkb::DispatchPin pin(0, 1, no_topology.path());
    ASSERT_EQ(pin.cpu(), allowed.back()) << pin.note();
    EXPECT_EQ(mask_of(this_tid()), std::vector<int>{allowed.back()});
    EXPECT_EQ(mask_of(helper_tid), rest) << "a thread that existed before the pin left the dispatch core";
    std::vector<std::vector<int>> worker_masks(4);
    pkb::parallel_for_each(4, 4, [&](size_t i) {
      if (this_tid() != syscall(SYS_getpid)) worker_masks[i] = mask_of(this_tid());
    });
    for (size_t i = 0; i < worker_masks.size(); ++i)
      if (!worker_masks[i].empty() && worker_masks[i] != std::vector<int>{allowed.back()}) {
        EXPECT_EQ(worker_masks[i], rest) << "a worker thread started during the pin ran on the dispatch core";
      }
  }
  EXPECT_EQ(mask_of(this_tid()), allowed);
  EXPECT_EQ(mask_of(helper_tid), allowed);
  {
    std::lock_guard<std::mutex> lock(m);
    release = true;
  }
  cv.notify_all();
  helper.join();
}

// The candidate pass holds a pin over all its judged calls and the timed loop asks for one inside it: the inner pin
// reports the outer one's CPU and changes nothing, and only the outer one restores.
TEST(DispatchPin, APinInsideAPinKeepsTheOuterOne) {
  const std::vector<int> allowed = pkb::allowed_cpus();
  if (allowed.size() < 2) GTEST_SKIP() << "one allowed CPU: nothing to pin to";
  pkb::test::TempDir no_topology;
  {
    pkb::DispatchPin outer(0, 1, no_topology.path());
    ASSERT_EQ(outer.cpu(), allowed.back()) << outer.note();
    {
      pkb::DispatchPin inner(0, 1, no_topology.path());
      EXPECT_EQ(inner.cpu(), outer.cpu());
    }
    EXPECT_EQ(mask_of(this_tid()), std::vector<int>{allowed.back()}) << "the inner pin undid the outer one";
  }
  EXPECT_EQ(mask_of(this_tid()), allowed);
}

TEST(DispatchPin, NothingIsPinnedWithoutTwoCoresPerLocalRankOrASlot) {
  pkb::test::TempDir no_topology;
  const std::vector<int> before = mask_of(this_tid());
  pkb::DispatchPin crowded(0, 1 << 20, no_topology.path());
  EXPECT_EQ(crowded.cpu(), -1);
  EXPECT_NE(crowded.note().find("fewer than 2 physical cores"), std::string::npos) << crowded.note();
  pkb::DispatchPin no_slot(3, 2, no_topology.path());
  EXPECT_EQ(no_slot.cpu(), -1);
  EXPECT_EQ(mask_of(this_tid()), before);
}

// The plan a rank's pin follows: its own core's first CPU, the others outside every local rank's dispatch core.
TEST(DispatchPin, ThePlanKeepsEveryLocalRanksDispatchCoreFree) {
  pkb::test::TempDir tmp;
  write_topology(tmp.path(), {{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7}});
  const std::vector<int> allowed{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  const pkb::DispatchPlan first = pkb::dispatch_plan(0, 2, allowed, tmp.path());
  const pkb::DispatchPlan second = pkb::dispatch_plan(1, 2, allowed, tmp.path());
  EXPECT_EQ(first.cpu, 7);
  EXPECT_EQ(second.cpu, 6);
  EXPECT_EQ(first.others, (std::vector<int>{0, 1, 2, 3, 4, 5, 8, 9, 10, 11, 12, 13}));
  EXPECT_EQ(second.others, first.others);
  const pkb::DispatchPlan crowded = pkb::dispatch_plan(0, 5, allowed, tmp.path());
  EXPECT_EQ(crowded.cpu, -1);
  EXPECT_NE(crowded.note.find("fewer than 2 physical cores for each of 5"), std::string::npos) << crowded.note;
  EXPECT_EQ(pkb::dispatch_plan_env(crowded).at("PKB_DISPATCH_CPU"), "");
  EXPECT_EQ(pkb::dispatch_plan_env(first),
            (std::map<std::string, std::string>{{"PKB_DISPATCH_CPU", "7"},
                                                {"PKB_DISPATCH_OTHERS", "0,1,2,3,4,5,8,9,10,11,12,13"},
                                                {"PKB_DISPATCH_NOTE", ""}}));
}

// run_reference.py (it times the PyTorch-eager baselines) applies the plan pkb passes in its environment: its
// dispatching thread on the plan's CPU, a thread that existed before on the others, every mask back afterwards; and
// with a plan that pins nothing, nothing moves and the note is the plan's.
TEST(DispatchPin, RunReferencePyAppliesThePlanItIsGiven) {
  const std::vector<int> allowed = pkb::allowed_cpus();
  if (allowed.size() < 2) GTEST_SKIP() << "one allowed CPU: nothing to pin to";
  pkb::test::TempDir tmp;
  auto run_python = [&](const pkb::DispatchPlan& plan) {
    std::string command = "env";
    for (const auto& [k, v] : pkb::dispatch_plan_env(plan)) command += " " + k + "='" + v + "'";
    const fs::path py = tmp.path() / "apply.py";
    std::ofstream(py) << R"(import os, sys, threading
sys.path.insert(0, sys.argv[1])
from dispatch_pin import DispatchPin
release = threading.Event()
helper = threading.Thread(target=release.wait)
helper.start()
def masks():
    return " ".join(",".join(map(str, sorted(os.sched_getaffinity(t)))) for t in (0, helper.native_id))
with DispatchPin() as pin:
    inside = masks()
print(pin.cpu, "|", pin.note, "|", inside, "|", masks())
release.set()
)";
    command += " python3 " + py.string() + " " + PKB_PYTHON_DIR;
    FILE* pipe = popen(command.c_str(), "r");
    std::string got;
    char buf[256];
    while (size_t n = fread(buf, 1, sizeof buf, pipe)) got.append(buf, n);
    EXPECT_EQ(pclose(pipe), 0) << got;
    return got;
  };
  auto list = [](const std::vector<int>& cpus) {
    std::string s;
    for (int c : cpus) s += (s.empty() ? "" : ",") + std::to_string(c);
    return s;
  };
  pkb::test::TempDir no_topology;
  const pkb::DispatchPlan plan = pkb::dispatch_plan(0, 1, allowed, no_topology.path());
  ASSERT_EQ(plan.cpu, allowed.back()) << plan.note;
  const std::string all = list(allowed);
  EXPECT_EQ(run_python(plan), std::to_string(plan.cpu) + " |  | " + std::to_string(plan.cpu) + " " + list(plan.others) +
                                  " | " + all + " " + all + "\n");
  const pkb::DispatchPlan crowded = pkb::dispatch_plan(0, 1 << 20, allowed, no_topology.path());
  EXPECT_EQ(run_python(crowded), "-1 | " + crowded.note + " | " + all + " " + all + " | " + all + " " + all + "\n");
}

}  // namespace
