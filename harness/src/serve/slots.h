// pkb serve's evaluation slots: threads that claim queued evaluations (Store::claim_next: round robin over clients,
// then priority) and run each exactly as `pkb eval` runs it, as a child `pkb eval FILE ... --json` process through
// launch/process (its own process group, SIGKILLed with the server: PR_SET_PDEATHSIG and the termination
// handler), so the sandbox, the runner and the verdict are pkb eval's own. Every slot passes one --cache, so
// compiles and reference passes are shared. On CPU ranks there are `slots` threads, each running W ranks; on GPUs
// one thread per GPU, each leasing W free GPUs (CUDA_VISIBLE_DEVICES) for the evaluation it claimed.
// An evaluation is `compiling` until its candidate pass starts (its run directory appears), then `running`.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/device_kind.h"
#include "serve/feed.h"
#include "serve/store.h"

namespace pkb::serve {

struct SlotOptions {
  DeviceKind device = DeviceKind::cpu;
  int slots = 1;                        // CPU: concurrent evaluations; cuda: ignored (one per GPU)
  std::vector<std::string> gpus;        // cuda: the GPUs to lease
  std::filesystem::path pkb;            // the pkb program the children run
  std::filesystem::path work_dir;       // one scratch directory per running evaluation
  std::filesystem::path cache_dir;      // pkb eval --cache, shared
  double candidate_timeout_s = 60;      // pkb eval --timeout
  double evaluation_deadline_s = 3600;  // the whole child's deadline
  std::vector<std::string> extra_args;  // more pkb eval flags (--no-sandbox for trusted deployments)
};

// Seconds an evaluation spent, for /metrics' quantiles: waiting in the queue, and in its slot.
struct Latency {
  double queue_s = 0, evaluation_s = 0;
};

class Slots {
 public:
  Slots(Store& store, ChangeFeed& feed, SlotOptions options);
  ~Slots();  // stops claiming and joins (running children are killed by the server's exit)
  void start();
  int count() const { return static_cast<int>(threads_.size()); }
  double busy_fraction() const;  // slot-seconds spent evaluating over slot-seconds since start
  std::vector<Latency> recent() const;

 private:
  void slot_loop(size_t slot);
  void evaluate(const Claim& c, const std::vector<std::string>& gpus);
  void conclude(const Claim& c, const std::filesystem::path& dir, double child_wall_s, const std::string& summary);
  std::vector<std::string> lease_gpus(int world);
  void release_gpus(const std::vector<std::string>& ids);

  Store& store_;
  ChangeFeed& feed_;
  SlotOptions o_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  double started_ = 0;
  mutable std::mutex mu_;  // below
  std::string cursor_;     // the round robin's last client
  std::vector<std::string> free_gpus_;
  std::condition_variable gpus_freed_;
  double busy_s_ = 0;                  // finished evaluations' slot time
  std::vector<double> running_since_;  // per slot: when its evaluation started (0: idle)
  std::deque<Latency> recent_;
};

}  // namespace pkb::serve
