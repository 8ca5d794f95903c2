// What a rank process needs to host a candidate: device memory operations, per-iteration timers, the
// symmetric heap and the cross-rank barrier — one interface, a CUDA implementation (CUDA IPC over NVLink,
// events, a flag barrier kernel) and a CPU one (POSIX shared memory, a steady clock, MPI_Barrier).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/element_draw.h"
#include "protocol/heap_alignment.h"

namespace pkb {

class Runtime {
 public:
  virtual ~Runtime() = default;
  virtual bool is_cuda() const = 0;
  virtual int device() const = 0;    // CUDA device, -1 on the CPU
  virtual void* stream() const = 0;  // cudaStream_t, nullptr on the CPU

  // Memory: copies in any direction between host and device memory (heap pointers are device memory on GPUs).
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void fill(void* dst, uint8_t byte, size_t bytes) = 0;
  // Device to device, enqueued on the stream without waiting (the host runs ahead, as in the timed loop).
  virtual void copy_async(void* dst, const void* src, size_t bytes) = 0;
  // Elements [0, n) of `d` into dst, ordered on the stream like copy_async: the host's generator on the CPU, a kernel
  // on GPUs, whose normal draws may differ from the host's in the last bit (core/element_draw.h).
  virtual void draw(void* dst, const ElementDraw& d, int64_t n) { draw_elements(d, dst, n); }
  // Whether two buffers (of this rank's memory) hold the same bytes; reads every byte either way, so the answer's
  // time does not depend on it. Waits for the stream.
  virtual bool same_bytes(const void* a, const void* b, size_t bytes);
  // Memory of this rank only, outside the symmetric heap (no peer maps it); freed with the runtime.
  virtual void* private_alloc(size_t bytes) = 0;
  // Device-wide synchronize; returns "" or the CUDA error that surfaced (illegal address, launch failure...).
  virtual std::string synchronize() = 0;
  virtual std::string stream_synchronize() = 0;

  // Timers: record(i) marks point i on the stream; elapsed_ms(i, j) after synchronize().
  virtual void timers_reserve(int n) = 0;
  virtual void record(int i) = 0;
  virtual double elapsed_ms(int i, int j) = 0;
  // Whether the device has reached point i (recorded earlier); true on the CPU, where record(i) is immediate.
  virtual bool reached(int i) = 0;
  // The host's clock in µs, for how long the host took to issue a call (the device view's hold): the steady clock;
  // a test's virtual runtime overrides it with its own.
  virtual double host_now_us() const;
  // Holds the stream for about `us` microseconds, so that work enqueued behind it meanwhile starts back to back,
  // without the host's dispatch between launches. On GPUs the hold fills every SM to its thread limit (no other
  // kernel can start beside it) and traces itself into `slot` (< hold_slots_reserve's n). No-op on the CPU.
  virtual void hold(double us, int slot) = 0;
  // Makes n hold traces ready (on the stream, before the holds that use them).
  virtual void hold_slots_reserve(int n) { (void)n; }
  // Whether a hold takes every thread slot of every SM, so that nothing else runs on an SM while it spins.
  virtual bool hold_fills_device() const { return false; }
  // What each of the first n holds saw (after a synchronize), in µs: how much later than its first block the last
  // one started (an SM still busy with other work delays its blocks) and the longest stretch any block went without
  // running (the GPU switched to another context). Both near zero on a GPU that ran nothing else.
  struct HoldTrace {
    double start_spread_us = 0, longest_gap_us = 0;
  };
  virtual std::vector<HoldTrace> hold_traces(int n) { return std::vector<HoldTrace>(n); }

  // A GPU runner's call gate (worker/call_gate.h), on the stream. Each throws pkb::Error on the CPU.
  // Host memory (page-aligned, `bytes` long) made readable and writable by the device; returns its device address.
  virtual void* map_host_memory(void* host, size_t bytes);
  // Takes every SM until *armed (host memory) reaches seq or max_us passed: no other kernel runs meanwhile.
  virtual void gate_hold(const uint32_t* armed, uint32_t seq, double max_us);
  virtual void flag_write(uint32_t* flag, uint32_t value);
  // Waits until *flag or *abort (nullptr: none) reaches seq, or max_us passed.
  virtual void flag_wait(const uint32_t* flag, const uint32_t* abort, uint32_t seq, double max_us);
  // After a gated call ended: makes sure nothing on the stream still waits for *flag to reach value (a stream memory
  // operation knows no abort). The flags' mechanism: "kernels", "write_ops" or "stream_memory_ops".
  virtual void flag_release(uint32_t*, uint32_t) {}
  virtual const char* flag_mechanism() const { return "kernels"; }
  struct GateTrace {
    long long holds = 0, timeouts = 0;
    double mean_wait_us = 0, max_wait_us = 0;
  };
  virtual GateTrace gate_trace();  // what the gate's holds saw so far (waits for the stream)

  // Symmetric heap: one region per rank, mapped into every rank of the job at the same offsets.
  char* heap_base(int rank) const { return static_cast<char*>(bases_[rank]); }
  size_t heap_size() const { return heap_size_; }
  void* const* heap_bases() const { return bases_.data(); }
  virtual void* const* heap_bases_device() const = 0;
  // Collective bump allocation. require_equal: every rank must ask for the same size (the candidate's
  // symm_alloc); otherwise the largest request is used (the harness's tensors, whose shapes may differ by rank).
  // Throws pkb::Error on mismatch or exhaustion, naming the ranks and sizes.
  void* alloc(size_t bytes, bool require_equal);
  void* peer(const void* p, int peer) const;
  size_t used() const { return used_; }
  // Descriptors of every rank's heap (rank q's at index q), for a process that maps them too (the CPU ranks' runner,
  // worker/runner_host.h); empty where the heap is not a file (GPUs).
  virtual std::vector<int> heap_fds() const { return {}; }
  // Every rank's CUDA IPC handle of its heap (cudaIpcMemHandle_t bytes, rank order): how another process on the node
  // maps the heaps (a GPU candidate's runner); empty on the CPU.
  virtual std::string heap_ipc_handles() const { return ""; }

  // Cross-rank barrier enqueued on the stream (device flag barrier on GPUs, MPI_Barrier on CPUs).
  virtual void barrier() = 0;

  int rank() const { return rank_; }
  int world() const { return world_; }

 protected:
  Runtime(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &world_);
  }
  MPI_Comm comm_;
  int rank_ = 0, world_ = 1;
  std::vector<void*> bases_;
  size_t heap_size_ = 0, used_ = 0;
  uint32_t* barrier_flags_ = nullptr;  // reserved at the start of the heap: 1 * world uint32
  uint32_t barrier_epoch_ = 0;
};

// CPU: shared memory segments named after `job_tag` (unique per launch), unlinked once every rank mapped them.
std::unique_ptr<Runtime> make_cpu_runtime(MPI_Comm comm, size_t heap_bytes, const std::string& job_tag);
// CUDA: the current device; heap through cudaMalloc + cudaIpcGetMemHandle exchanged over MPI. Work goes on a
// fresh non-blocking stream, or with legacy_stream on the legacy default stream (ATen's and the NCCL
// communicator's, for timing references).
std::unique_ptr<Runtime> make_cuda_runtime(MPI_Comm comm, size_t heap_bytes, bool legacy_stream = false);
// L2 size of the current device in bytes (0 without CUDA).
size_t cuda_l2_bytes();

// Versions for provenance ("" where unknown): CUDA driver and runtime, NCCL, GPU name.
struct RuntimeVersions {
  std::string gpu, driver, cuda_runtime, nccl;
};
RuntimeVersions runtime_versions(int device);

}  // namespace pkb
