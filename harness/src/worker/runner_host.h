// The monitor's side of pkb-runner (worker/runner_protocol.h): starts the runner, wakes it for one call at a time (or,
// for a GPU runner's paper method, one block of calls) and waits until it is frozen again. A call's window, as the
// monitor's clock sees it, is every moment candidate code could run for that call.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "protocol/runner_layout.h"
#include "worker/runner_protocol.h"

namespace pkb {

// pkb-runner, beside the rank program that starts it.
std::filesystem::path runner_program();

class RunnerProcess {
 public:
  // Starts `program` with the control page (holding `layout`) and the heaps' descriptors (rank q's at index q), and
  // waits until it has loaded the library and stopped. The runner's cwd and TMPDIR are `work_dir`.
  RunnerProcess(const std::filesystem::path& program, const protocol::RunnerLayout& layout,
                const std::vector<int>& heap_fds, const std::filesystem::path& work_dir);
  ~RunnerProcess();  // kills and reaps it
  RunnerProcess(const RunnerProcess&) = delete;
  RunnerProcess& operator=(const RunnerProcess&) = delete;

  // What became of a call. failure: "" when the runner finished it and stopped; else why not (it died, or stopped
  // without finishing). rc and error are the runner's claims, read once it is frozen.
  struct Outcome {
    std::string failure;
    bool killed_by_signal = false;
    int signal = 0;
    int rc = 0;
    std::string error;
  };
  // A runner with no library whose calls do nothing: the doorbell alone (the baselines' timing on CPU ranks).
  static std::unique_ptr<RunnerProcess> ping_only(const std::filesystem::path& program,
                                                  const std::filesystem::path& work_dir);
  // The median time of `n` calls that do nothing, in µs, by the steady clock: what every window includes (0 if the
  // runner failed one: the first real call says why).
  double doorbell_us(int n = 21);
  uint32_t next_seq() const { return seq_ + 1; }     // the sequence number the next call will carry
  const Outcome& loaded() const { return loaded_; }  // the library's load: error holds dlopen's message
  std::string lockdown_note() const;                 // "" when the runner applied its whole lockdown
  Outcome call(runner::Op op, int slot);             // checks ran_between_calls first
  // kRunBlock: one wake for slots.size() calls of pkb_run (1 to runner::kMaxBlockCalls, else pkb::Error), call i on
  // slots[i] with sequence number next_seq() + i; done once the runner finished the last. Checks ran_between_calls
  // first. The slots are not checked here: a runner refuses (dies on) one that is not there.
  Outcome call_block(const std::vector<int>& slots);
  // Why the runner is not as the last call left it (resumed, stopped again or gone since), or "". A call gate asks
  // before it enqueues anything: a runner that woke between calls must not get device work in ahead of the hold.
  std::string ran_between_calls();

 private:
  Outcome wake(uint32_t calls);  // seq_ += calls, SIGCONT, wait_stopped
  Outcome wait_stopped(uint32_t seq);
  pid_t pid_ = -1;
  unsigned continues_at_stop_ = 0;  // the monitor's own SIGCONTs when the runner last stopped
  runner::Control* control_ = nullptr;
  uint32_t seq_ = 0;
  bool gone_ = false;
  Outcome loaded_;
};

}  // namespace pkb
