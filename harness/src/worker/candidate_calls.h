// How the candidate pass reaches the candidate's code: through a runner process (the default: the candidate never runs
// in the process that judges it, worker/runner_host.h; on GPUs through the call gate) or, on GPUs with
// --candidate-process in-process, by calling the library loaded into this process.
// Both see the same heap slots; the pass (worker/candidate_pass.cpp) never knows which one it drives.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "inputs/host_tensor.h"
#include "runtime/runtime.h"
#include "worker/call_gate.h"
#include "worker/runner_protocol.h"
#include "worker/worker.h"

namespace pkb {

// One tensor slot in the heap: same offset on every rank, sized for the largest rank's shape.
struct Slot {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;  // this rank's
  size_t bytes = 0;            // this rank's
  void* data = nullptr;
};

// What a call came to. failure: the candidate's process did not finish it (it died, or stopped early): the pass
// records it as a crash (signal) or a runtime error. rc and callback_error are what the candidate's side reported.
struct CallOutcome {
  std::string failure;
  int signal = 0;  // > 0: the candidate's process was killed by it
  int rc = 0;
  std::string callback_error;
};

class CandidateCalls {
 public:
  virtual ~CandidateCalls() = default;
  // "" once the library is loaded with pkb_run; else why not (a load_error). A crash while loading: load_outcome.
  virtual std::string load_error() const = 0;
  virtual CallOutcome load_outcome() const { return {}; }
  // `bracket`: what a call gate enqueues around the call (GPU runners; ignored elsewhere).
  virtual CallOutcome call(runner::Op op, int slot, const CallBracket& bracket) = 0;
  // Where the candidate runs, for the record ("runner process" or "in process"), and what of the runner's lockdown
  // could not be applied ("" when all of it was, or where there is no runner).
  virtual std::string where() const = 0;
  virtual std::string lockdown_note() const { return ""; }
  // The median time of calls that do nothing (waking the runner until it is frozen again); 0 in process.
  virtual double doorbell_us() { return 0; }
  // GPU runners: every call passes the call gate (worker/call_gate.h). The gate's record (elsewhere null).
  virtual bool gated() const { return false; }
  // GPU runners: slots.size() calls of pkb_run in one wake of the runner (runner::kRunBlock, at most
  // runner::kMaxBlockCalls), call i on slots[i] inside brackets[i] (CallGate::open_block). The outcome is the block's:
  // rc the first call's that was not 0. Elsewhere never called (pkb::Error).
  virtual CallOutcome call_block(const std::vector<int>& slots, const std::vector<CallBracket>& brackets);
  virtual nlohmann::json gate_json() { return nullptr; }
};

// The heap's input slots and outputs, and what the candidate's side needs to see them.
struct HeapLayout {
  std::vector<std::vector<Slot>> inputs;  // per slot
  std::vector<Slot> outputs;
  size_t arena_offset = 0;  // where the candidate's symm_alloc space starts
  // Host memory every runner maps (rank q's descriptor at q): the heaps themselves on CPU ranks, a small segment of
  // the monitors' on GPUs (whose heaps the runner opens by CUDA IPC). The runners' SyncLines are at sync_offset in
  // rank 0's.
  std::vector<int> host_fds;
  size_t host_bytes = 0, sync_offset = 0;
  size_t flags_offset = 0;  // GPUs: the runners' device-barrier flags, at this offset of every heap
  // GPU runners: the call gate's flags, in this rank's host segment (`own_host_segment`, host_bytes long) and heap.
  char* own_host_segment = nullptr;
  size_t gate_host_offset = 0, gate_offset = 0;
};

// The candidate library in a pkb-runner process beside this one (the default).
std::unique_ptr<CandidateCalls> start_runner(const WorkerOptions& o, const WorkerEnv& env, Runtime& rt,
                                             const HeapLayout& heap);
// The candidate library loaded into this process (GPUs with --candidate-process in-process).
std::unique_ptr<CandidateCalls> load_in_process(const WorkerOptions& o, const WorkerEnv& env, Runtime& rt,
                                                const HeapLayout& heap);

}  // namespace pkb
