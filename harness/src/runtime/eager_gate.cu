// libpkb_eager_gate.so: the call gate's one-process instrument for reference.py (harness/python/run_reference.py
// --gate-lib), so that PyTorch eager's calls are timed through the same flag operations as the libtorch baseline's
// gated view and a runner's calls (worker/call_gate.h): on a monitor stream of its own the start event and `go`; on the
// caller's stream a wait for `go`, the call, then `done`; on the monitor stream a wait for `done` and the end event.
// The flags are made as the gate's are (call_gate.cuh FlagMechanism, PKB_GATE_FLAGS, default write_ops). A C ABI:
// Python loads it with ctypes. No hold and no device barrier: both come before a gated window's start event.
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "runtime/call_gate.cuh"

namespace {

struct Flags {
  uint32_t go, done;
};

struct EagerGate {
  cudaStream_t monitor = nullptr;
  Flags* flags = nullptr;
  uint32_t seq = 0;
  pkb::gate::FlagMechanism mechanism;
  std::vector<cudaEvent_t> starts, ends;
};

thread_local std::string last_error;

bool ok(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return true;
  last_error = std::string(what) + ": " + cudaGetErrorString(rc);
  return false;
}

// The wait kernels' deadline: a flag never written (a call that failed in Python) releases its stream after this.
constexpr unsigned long long kWaitMaxNs = 2'000'000'000ull;

bool write_flag(EagerGate& g, cudaStream_t s, uint32_t* flag) {
  last_error = pkb::gate::enqueue_flag_write(g.mechanism, s, flag, g.seq);
  return last_error.empty() && ok(cudaGetLastError(), "the flag's write kernel");
}

bool wait_flag(EagerGate& g, cudaStream_t s, const uint32_t* flag) {
  last_error = pkb::gate::enqueue_flag_wait(g.mechanism, s, flag, nullptr, g.seq, kWaitMaxNs);
  return last_error.empty() && ok(cudaGetLastError(), "the flag's wait kernel");
}

bool in_range(const EagerGate& g, int window) {
  if (window >= 0 && window < static_cast<int>(g.starts.size())) return true;
  last_error = "window " + std::to_string(window) + " of " + std::to_string(g.starts.size());
  return false;
}

}  // namespace

extern "C" {

// Why the last call that returned failure failed.
const char* pkb_eager_gate_error() { return last_error.c_str(); }

// The flags' mechanism's name ("write_ops", "stream_memory_ops" or "kernels"), as records spell it.
const char* pkb_eager_gate_flags(void* gate) { return static_cast<EagerGate*>(gate)->mechanism.name(); }

// A gate on `device` with `windows` pairs of events; nullptr on failure.
void* pkb_eager_gate_open(int device, int windows) {
  if (windows < 1 || windows > (1 << 20)) {
    last_error = "windows " + std::to_string(windows) + ": expected 1 to 2^20";
    return nullptr;
  }
  auto* g = new EagerGate;
  g->mechanism = pkb::gate::chosen_flag_mechanism();
  bool good = ok(cudaSetDevice(device), "cudaSetDevice") &&
              ok(cudaStreamCreateWithFlags(&g->monitor, cudaStreamNonBlocking), "the monitor's stream") &&
              ok(cudaMalloc(&g->flags, sizeof(Flags)), "the flags' memory") &&
              ok(cudaMemset(g->flags, 0, sizeof(Flags)), "clearing the flags");
  g->starts.resize(windows), g->ends.resize(windows);
  for (int i = 0; good && i < windows; ++i)
    good = ok(cudaEventCreate(&g->starts[i]), "an event") && ok(cudaEventCreate(&g->ends[i]), "an event");
  if (good && ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return g;
  delete g;  // its CUDA objects go with the process
  return nullptr;
}

// Before call `window` on `stream` (the caller's current stream): the stream's wait for `go` first, then the monitor's
// start event and `go`, so that launching the wait is not in the window (the libtorch view's hold holds the start
// until its wait is enqueued: worker/call_gate.cpp). 0, or -1 (pkb_eager_gate_error says why).
int pkb_eager_gate_begin(void* gate, int window, void* stream) {
  auto& g = *static_cast<EagerGate*>(gate);
  auto s = static_cast<cudaStream_t>(stream);
  if (!in_range(g, window)) return -1;
  ++g.seq;
  return wait_flag(g, s, &g.flags->go) && ok(cudaEventRecord(g.starts[window], g.monitor), "the start event") &&
                 write_flag(g, g.monitor, &g.flags->go)
             ? 0
             : -1;
}

// After the call: `done` on its stream, the monitor's wait for it and the end event.
int pkb_eager_gate_end(void* gate, int window, void* stream) {
  auto& g = *static_cast<EagerGate*>(gate);
  auto s = static_cast<cudaStream_t>(stream);
  if (!in_range(g, window)) return -1;
  return write_flag(g, s, &g.flags->done) && wait_flag(g, g.monitor, &g.flags->done) &&
                 ok(cudaEventRecord(g.ends[window], g.monitor), "the end event")
             ? 0
             : -1;
}

// Window `window`'s time in microseconds (waits for its end event); negative on failure.
double pkb_eager_gate_elapsed_us(void* gate, int window) {
  auto& g = *static_cast<EagerGate*>(gate);
  float ms = 0;
  if (!in_range(g, window) || !ok(cudaEventSynchronize(g.ends[window]), "the end event") ||
      !ok(cudaEventElapsedTime(&ms, g.starts[window], g.ends[window]), "cudaEventElapsedTime"))
    return -1;
  return 1e3 * ms;
}

}  // extern "C"
