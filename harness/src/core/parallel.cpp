#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "core/cores.h"
#include "core/dispatch_pin.h"

namespace pkb {
namespace {

std::atomic<int> configured{0};  // 0: not set, usable_cores()
thread_local bool inside_chunk = false;

// False when the system refuses another thread: the loop then runs on those it has (the caller's at least).
// A worker leaves the dispatch core first (core/dispatch_pin.h): it would inherit a pinned caller's one CPU.
template <typename Work>
bool start_thread(std::vector<std::thread>& pool, Work& work) {
  try {
    pool.emplace_back([&work] {
      move_off_dispatch_cores();
      work();
    });
    return true;
  } catch (const std::system_error&) {
    return false;
  }
}

}  // namespace

void set_host_threads(int threads) { configured = std::max(1, threads); }

int host_threads() {
  int n = configured.load();
  return n > 0 ? n : usable_cores();
}

void parallel_ranges(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t chunks = (n + grain - 1) / grain;
  int threads = static_cast<int>(std::min<int64_t>(chunks, inside_chunk ? 1 : host_threads()));
  if (threads <= 1) {
    body(0, n);
    return;
  }
  // Chunks are handed out one at a time, so threads that draw cheap ones take more.
  std::atomic<int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    inside_chunk = true;
    for (int64_t c; (c = next.fetch_add(1)) < chunks;) {
      try {
        body(c * grain, std::min(n, (c + 1) * grain));
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = chunks;  // no new chunks
      }
    }
    inside_chunk = false;
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    if (!start_thread(pool, work)) break;
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

void parallel_for_each(size_t n, int workers, const std::function<void(size_t)>& body) {
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  size_t threads = std::min(n, static_cast<size_t>(std::max(1, workers)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    if (!start_thread(pool, work)) break;
  work();
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace pkb
