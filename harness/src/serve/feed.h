// A counter of state changes that threads can wait on: slots wait on it for new work, Server-Sent Event streams
// for changes to report. Waiters re-read the store after a wake-up, so a missed bump costs at most the timeout.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace pkb::serve {

class ChangeFeed {
 public:
  void bump() {
    {
      std::lock_guard lock(mu_);
      ++count_;
    }
    cv_.notify_all();
  }
  // Returns once the count differs from `seen`, the feed stops, or `timeout_s` passes; the count then.
  int64_t wait_after(int64_t seen, double timeout_s) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return count_ != seen || stopped_; });
    return count_;
  }
  int64_t current() {
    std::lock_guard lock(mu_);
    return count_;
  }
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }
  bool stopped() {
    std::lock_guard lock(mu_);
    return stopped_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t count_ = 0;
  bool stopped_ = false;
};

}  // namespace pkb::serve
