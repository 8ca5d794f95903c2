// What `pkb run` does from several threads at once (its compile pool and its GPU slots): start and kill
// process groups, capture a command's output, compile into the shared cache, and ask lazily computed facts
// (compiler version, Python with torch, the sandbox probe, the repository revision). Torch-free, so that
// scripts/tsan.sh also builds and runs it under ThreadSanitizer, where a data race fails the test run.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "compile/compiler.h"
#include "core/parallel.h"
#include "launch/jobs.h"
#include "launch/process.h"
#include "launch/sandbox.h"
#include "spec/catalog.h"
#include "test_util.h"

namespace {

constexpr int kThreads = 8;

template <class F>
void on_threads(F f) {
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(f, i);
  for (auto& t : threads) t.join();
}

TEST(Concurrency, CapturedOutputsNeverMix) {
  std::vector<std::string> got(kThreads);
  on_threads([&](int i) {
    for (int round = 0; round < 4; ++round)
      got[i] += pkb::capture_stdout({"sh", "-c", "echo thread" + std::to_string(i)});
  });
  for (int i = 0; i < kThreads; ++i) {
    std::string one = "thread" + std::to_string(i) + "\n";
    EXPECT_EQ(got[i], one + one + one + one) << i;
  }
}

TEST(Concurrency, ProcessGroupsStartAndDieIndependently) {
  std::vector<pkb::ProcessResult> quick(kThreads), slow(kThreads);
  on_threads([&](int i) {
    pkb::ProcessOptions o;
    o.timeout_s = 0.3;
    o.kill_grace_s = 0.1;
    slow[i] = pkb::run_process({"sh", "-c", "sleep 30"}, o);
    o.timeout_s = 20;
    quick[i] = pkb::run_process_group({{"sh", "-c", "exit " + std::to_string(i % 3)}, {"true"}}, {o, o}).front();
  });
  for (int i = 0; i < kThreads; ++i) {
    EXPECT_TRUE(slow[i].timed_out) << i;
    EXPECT_FALSE(quick[i].timed_out) << i;
    EXPECT_EQ(quick[i].exit_code, i % 3) << i;
  }
}

TEST(Concurrency, LazyFactsAreComputedOnceAndAgree) {
  std::vector<std::string> python(kThreads), sandbox(kThreads), revision(kThreads);
  on_threads([&](int i) {
    python[i] = pkb::python_with_torch();
    sandbox[i] = pkb::sandbox_unavailable();
    revision[i] = pkb::repo_revision();
  });
  for (const auto* v : {&python, &sandbox, &revision})
    EXPECT_EQ(std::set<std::string>(v->begin(), v->end()).size(), 1u);
  EXPECT_FALSE(revision[0].empty());
}

TEST(Concurrency, CompilationsIntoOneCacheAgree) {
  pkb::test::TempDir tmp;
  pkb::test::write_file(tmp.path() / "kernel.cpp", "extern \"C\" int pkb_answer() { return 42; }\n");
  pkb::CompileOptions o;
  o.cuda = false;
  o.sandbox = false;  // the sandboxed path is the same code around a different argv; bwrap may be missing here
  o.cache_dir = tmp.path() / "cache";
  o.include_dir = pkb::repo_root() / "harness/include";
  std::vector<pkb::CompileResult> r(kThreads);
  std::vector<std::string> errors(kThreads);
  on_threads([&](int i) {
    try {
      r[i] = pkb::compile_candidate(tmp.path() / "kernel.cpp", o);
    } catch (const std::exception& e) {
      errors[i] = e.what();
    }
  });
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_EQ(errors[i], "");
    EXPECT_EQ(r[i].status, pkb::CompileStatus::ok) << r[i].log;
    EXPECT_EQ(r[i].hash, r[0].hash);
    EXPECT_TRUE(std::filesystem::exists(r[i].library)) << r[i].library;
  }
}

TEST(Concurrency, SandboxesReportAndLoseTheirNamespaceInits) {
  if (!pkb::sandbox_unavailable().empty()) GTEST_SKIP() << pkb::sandbox_unavailable();
  std::vector<pkb::ProcessResult> r(kThreads);
  on_threads([&](int i) {
    pkb::ProcessOptions o;
    o.timeout_s = i % 2 ? 0.5 : 30;  // half end by themselves, half are killed at the deadline
    r[i] = pkb::run_sandboxed({}, {"/bin/sh", "-c", i % 2 ? "sleep 30" : "exit 0"}, o);
  });
  for (int i = 0; i < kThreads; ++i) EXPECT_EQ(r[i].timed_out, i % 2 == 1) << i << " " << r[i].summary();
}

// Restores the process's host thread count when a test ends.
struct HostThreads {
  explicit HostThreads(int n) : saved(pkb::host_threads()) { pkb::set_host_threads(n); }
  ~HostThreads() { pkb::set_host_threads(saved); }
  int saved;
};

TEST(ParallelRanges, CoversEveryIndexOnceInChunksOfTheGrain) {
  HostThreads four(4);
  for (int64_t n : {0, 1, 7, 1000, 1001}) {
    std::vector<std::atomic<int>> hits(n);
    std::mutex m;
    std::vector<std::pair<int64_t, int64_t>> chunks;
    pkb::parallel_ranges(n, 100, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) ++hits[i];
      std::lock_guard<std::mutex> lock(m);
      chunks.push_back({b, e});
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "n " << n << " index " << i;
    for (auto [b, e] : chunks) EXPECT_TRUE(e - b == 100 || e == n) << b << ".." << e << " of " << n;
  }
}

TEST(ParallelRanges, RunsChunksOnSeveralThreadsButNestedCallsSerially) {
  HostThreads four(4);
  // Each of 4 chunks waits until all 4 have started: only 4 threads at once can get past the wait.
  std::atomic<int> started{0};
  std::mutex m;
  std::set<std::thread::id> ids;
  std::vector<std::set<std::thread::id>> nested_ids(4);
  pkb::parallel_ranges(4, 1, [&](int64_t b, int64_t) {
    ++started;
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (started < 4 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    pkb::parallel_ranges(8, 1, [&](int64_t, int64_t) {
      std::lock_guard<std::mutex> lock(m);
      nested_ids[b].insert(std::this_thread::get_id());
    });
    std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
  });
  EXPECT_EQ(started, 4);
  EXPECT_EQ(ids.size(), 4u) << "one thread per chunk while all of them wait";
  for (const auto& n : nested_ids) EXPECT_EQ(n.size(), 1u) << "a nested loop stays on its chunk's thread";

  HostThreads one(1);
  std::set<std::thread::id> serial;
  pkb::parallel_ranges(16, 1, [&](int64_t, int64_t) { serial.insert(std::this_thread::get_id()); });
  EXPECT_EQ(serial, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ParallelRanges, RethrowsTheFirstFailureAfterEveryThreadEnds) {
  HostThreads four(4);
  std::atomic<int> running{0};
  try {
    pkb::parallel_ranges(64, 1, [&](int64_t b, int64_t) {
      ++running;
      if (b == 3) throw std::runtime_error("chunk 3 failed");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      --running;
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "chunk 3 failed");
  }
  EXPECT_EQ(running, 1) << "only the failed chunk is left counted: every other one finished before the rethrow";
}

TEST(ParallelForEach, RunsEachItemOnceOnTheWorkersItIsGiven) {
  HostThreads one(1);  // the worker count is the caller's, not host_threads()
  constexpr int kItems = 40, kWorkers = 4;
  std::vector<std::atomic<int>> hits(kItems);
  std::atomic<int> started{0};
  std::mutex m;
  std::set<std::thread::id> ids;
  pkb::parallel_for_each(kItems, kWorkers, [&](size_t i) {
    // The first kWorkers items wait until all of them have started: only kWorkers threads at once get past it.
    if (i < kWorkers) {
      ++started;
      auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (started < kWorkers && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    }
    ++hits[i];
    std::lock_guard<std::mutex> lock(m);
    ids.insert(std::this_thread::get_id());
  });
  for (int i = 0; i < kItems; ++i) EXPECT_EQ(hits[i], 1) << i;
  EXPECT_EQ(started, kWorkers);
  EXPECT_EQ(ids.size(), static_cast<size_t>(kWorkers));
  pkb::parallel_for_each(0, kWorkers, [&](size_t) { ADD_FAILURE() << "no items, no calls"; });
  std::set<std::thread::id> serial;
  pkb::parallel_for_each(5, 0, [&](size_t) { serial.insert(std::this_thread::get_id()); });
  EXPECT_EQ(serial, std::set<std::thread::id>{std::this_thread::get_id()}) << "workers <= 0: the caller alone";
}

// Unlike parallel_ranges, a failure does not cancel the rest (a failed compile must not cost the others theirs).
TEST(ParallelForEach, RunsEveryItemDespiteAFailureThenRethrowsIt) {
  std::vector<std::atomic<int>> hits(32);
  try {
    pkb::parallel_for_each(hits.size(), 4, [&](size_t i) {
      ++hits[i];
      if (i == 2) throw std::runtime_error("item 2 failed");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "item 2 failed");
  }
  for (size_t i = 0; i < hits.size(); ++i) EXPECT_EQ(hits[i], 1) << i;
}

}  // namespace
