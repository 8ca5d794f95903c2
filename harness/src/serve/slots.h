// pkb serve's evaluation slots: threads that claim evaluations from a WorkSource and run each exactly as `pkb eval`
// runs it (serve/evaluation.h). The source is the server's own store (LocalWork: round robin over clients, then
// priority) or, in a `pkb worker`, a server over HTTP (serve/worker.h). Every slot passes one --cache, so compiles
// and reference passes are shared. On CPU ranks there are `slots` threads, each running W ranks; on GPUs one thread
// per GPU, each leasing W free GPUs (CUDA_VISIBLE_DEVICES) for the evaluation it claimed, and claiming only what
// fits the GPUs free then: a smaller evaluation is taken past one that must wait for more (a small backfill; a large
// W can wait as long as smaller ones keep GPUs busy).
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

#include "serve/evaluation.h"
#include "serve/feed.h"
#include "serve/store.h"

namespace pkb::serve {

// Where slots get evaluations and where their outcomes go. Its calls may throw pkb::Error (a busy database, an
// unreachable server): the slot logs it and tries again.
class WorkSource {
 public:
  virtual ~WorkSource() = default;
  // The next evaluation of W <= max_world, waiting up to about `wait_s` for one; none when there is none.
  virtual std::optional<Claim> claim(int max_world, double wait_s) = 0;
  virtual void started(const Claim& c) = 0;  // its candidate pass started
  virtual bool keep(const Claim& c) = 0;     // polled while it runs: false kills it (cancelled, claim lost)
  virtual void finish(const Claim& c, const Outcome& o) = 0;
  virtual void nudge() {}  // something changed that a waiting claim should see (GPUs freed, slots stopping)
};

// The server's own store: claims without a lease, state changes announced on the feed.
class LocalWork : public WorkSource {
 public:
  LocalWork(Store& store, ChangeFeed& feed) : store_(store), feed_(feed) {}
  std::optional<Claim> claim(int max_world, double wait_s) override;
  void started(const Claim& c) override;
  bool keep(const Claim& c) override;
  void finish(const Claim& c, const Outcome& o) override;
  void nudge() override { feed_.bump(); }

 private:
  Store& store_;
  ChangeFeed& feed_;
};

struct SlotOptions {
  EvalSettings eval;
  int slots = 1;                  // CPU: concurrent evaluations (0: none); cuda: ignored (one per GPU)
  std::vector<std::string> gpus;  // cuda: the GPUs to lease
  double claim_wait_s = 1;        // how long one claim waits for work
};

// Seconds an evaluation spent, for /metrics' quantiles: waiting in the queue, and in its slot.
struct Latency {
  double queue_s = 0, evaluation_s = 0;
};

class Slots {
 public:
  Slots(WorkSource& source, SlotOptions options);
  ~Slots();  // stop()
  void start();
  // Stops claiming and waits for the evaluations running (or claimed meanwhile) to finish. A process that exits
  // without it kills its children (PR_SET_PDEATHSIG, the termination handler).
  void stop();
  int count() const { return static_cast<int>(running_since_.size()); }
  double busy_fraction() const;  // slot-seconds spent evaluating over slot-seconds since start
  std::vector<Latency> recent() const;
  double idle_s() const;  // seconds since the last evaluation ended (or the start) when none runs; else 0
  int evaluated() const;  // evaluations run to an outcome or ended by `keep`

 private:
  void slot_loop(size_t slot);
  std::optional<Claim> next_claim(std::vector<std::string>* gpus);
  void evaluate(const Claim& c, const std::vector<std::string>& gpus);
  void release_gpus(const std::vector<std::string>& ids);

  WorkSource& source_;
  SlotOptions o_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  double started_ = 0;
  std::mutex claim_mu_;    // one slot claims at a time: it may take what the GPUs free then can hold
  mutable std::mutex mu_;  // below
  std::vector<std::string> free_gpus_;
  std::condition_variable gpus_freed_;
  double busy_s_ = 0, last_end_ = 0;   // finished evaluations' slot time; when the last one ended
  int evaluated_ = 0;                  // evaluations run (to an outcome or ended by `keep`)
  std::vector<double> running_since_;  // per slot: when its evaluation started (0: idle)
  std::deque<Latency> recent_;
};

}  // namespace pkb::serve
