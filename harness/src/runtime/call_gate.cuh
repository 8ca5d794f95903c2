// The call gate's device side (worker/call_gate.h), shared by the monitor's runtime (runtime/cuda_runtime.cu) and the
// runner (worker/runner_device.cu). Sequence numbers compare modulo 2^32: `seq` is reached once the flag is at or past
// it, so no flag ever needs resetting.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "../../include/pkb/device.cuh"

namespace pkb::gate {

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ bool reached(uint32_t flag, uint32_t seq) { return static_cast<int32_t>(flag - seq) >= 0; }

// What the monitor's holds saw, accumulated on the device (its private memory).
struct HoldTrace {
  unsigned long long holds, timeouts, wait_ns_sum, wait_ns_max;
};

constexpr int kHoldThreads = 256;

// The gate's hold: launched to take every thread slot of every SM (as the timing hold is), it spins until the runner
// says it is about to make call `seq` (`armed`, host memory) or `max_ns` passed, so that no kernel of the candidate's
// can run while its process wakes up. Block 0 watches the host flag and tells the others through `release` (device
// memory the runner cannot reach), so that mostly one thread reads across PCIe, not every block.
static __global__ void __launch_bounds__(kHoldThreads)
    gate_hold_kernel(const uint32_t* armed, uint32_t* release, uint32_t seq, unsigned long long max_ns,
                     HoldTrace* trace) {
  const unsigned long long t0 = now_ns();
  if (threadIdx.x == 0 && blockIdx.x == 0) {
    bool timed_out = false;
    while (!reached(pkb_load_acquire_sys(armed), seq))
      if (now_ns() - t0 > max_ns) {
        timed_out = true;
        break;
      }
    pkb_store_release_sys(release, seq);
    const unsigned long long waited = now_ns() - t0;
    atomicAdd(&trace->holds, 1ull);
    if (timed_out) atomicAdd(&trace->timeouts, 1ull);
    atomicAdd(&trace->wait_ns_sum, waited);
    atomicMax(&trace->wait_ns_max, waited);
  } else if (threadIdx.x == 0) {
    // The others watch release, and now and then the host flag themselves: a block 0 that is not resident yet (an
    // SM still runs a peer's kernel) holds none of them up.
    for (unsigned i = 1; !reached(pkb_load_acquire_sys(release), seq); ++i)
      if ((i & 63) == 0 && (reached(pkb_load_acquire_sys(armed), seq) || now_ns() - t0 > max_ns)) break;
  }
  __syncthreads();
}

// Stream memory operations: the GPU's front end writes a flag, or holds a stream until a flag reaches a value, with
// no kernel and no SM (a kernel boundary on each side of a flag was most of the gate's cost). From the driver by entry
// point, so that nothing links libcuda. Wait: cyclic >= (CU_STREAM_WAIT_VALUE_GEQ, the same compare as reached()).
// Write: preceded by a system-wide memory fence (CU_STREAM_WRITE_VALUE_DEFAULT), so the work before it is visible.
struct MemOps {
  using Fn = int (*)(cudaStream_t, unsigned long long, uint32_t, unsigned);  // CUresult (*)(CUstream, CUdeviceptr, ...)
  Fn write = nullptr, wait = nullptr;
  bool available() const { return write && wait; }
};
inline const MemOps& mem_ops() {
  static const MemOps ops = [] {
    MemOps m;
    auto find = [](const char* name) -> MemOps::Fn {
      void* fn = nullptr;
      cudaDriverEntryPointQueryResult found;
      if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
          found != cudaDriverEntryPointSuccess)
        return nullptr;
      return reinterpret_cast<MemOps::Fn>(fn);
    };
    m.write = find("cuStreamWriteValue32");
    m.wait = find("cuStreamWaitValue32");
    return m;
  }();
  return ops;
}
constexpr unsigned kWaitGeq = 0x0, kWriteDefault = 0x0;

// How the gate's flags are made. Writes as stream memory operations, waits as one-thread kernels (write_ops) is the
// default: on an H100 under MPS a do-nothing call's window was 8.8 us through a runner and 8.7 us through the same
// flags on two streams of one process (the libtorch baseline's gated view), against 10.7 and 9.8 us with waits as
// memory operations too, and 13 us with kernels for both (docs/results/gate-toll-h100-2026-12-06.md). A wait kernel
// also knows an abort flag and a deadline, which a stream-op wait does not. Kernels where the driver has no memory
// operations; PKB_GATE_FLAGS=kernels|write_ops|stream_memory_ops picks one, to measure.
// The monitor's choice goes to the runner in its layout (gate_flags), by name.
struct FlagMechanism {
  bool write_ops = false;  // flags written by cuStreamWriteValue32, not a kernel
  bool wait_ops = false;   // waited for by cuStreamWaitValue32, not a kernel
  const char* name() const { return wait_ops ? "stream_memory_ops" : write_ops ? "write_ops" : "kernels"; }
};
// By name; no name (nullptr or ""): the default, write_ops.
inline FlagMechanism flag_mechanism_named(const char* name) {
  const std::string_view n = name && *name ? name : "write_ops";
  return {n == "write_ops" || n == "stream_memory_ops", n == "stream_memory_ops"};
}
// The flags a gate of this process uses: PKB_GATE_FLAGS's, else the default; kernels where the driver has no memory
// operations.
inline FlagMechanism chosen_flag_mechanism() {
  const FlagMechanism m = flag_mechanism_named(std::getenv("PKB_GATE_FLAGS"));
  return mem_ops().available() ? m : FlagMechanism{};
}

static __global__ void flag_write_kernel(uint32_t* flag, uint32_t value) {
  __threadfence_system();  // everything before it on the stream is visible first
  pkb_store_release_sys(flag, value);
}

// Spins until *flag reaches seq, *abort (if given) reaches seq, or max_ns passed. One thread: it holds no SM's worth
// of slots while a call runs beside it.
static __global__ void flag_wait_kernel(const uint32_t* flag, const uint32_t* abort, uint32_t seq,
                                        unsigned long long max_ns) {
  const unsigned long long t0 = now_ns();
  for (unsigned i = 0; !reached(pkb_load_acquire_sys(flag), seq); ++i)
    if ((i & 31) == 0 && ((abort && reached(pkb_load_acquire_sys(abort), seq)) || now_ns() - t0 > max_ns)) break;
}

// A flag's write and a wait for it, enqueued on `s` by mechanism `m`: the one definition the monitor's runtime, the
// runner and the eager gate share. "" or which memory operation failed; a kernel's launch error is left for the
// caller to read (cudaGetLastError), as it reads its other launches'. `abort` and `max_ns` bind kernels only: a
// stream-op wait knows neither.
static inline std::string enqueue_flag_write(const FlagMechanism& m, cudaStream_t s, uint32_t* flag, uint32_t value) {
  if (!m.write_ops) {
    flag_write_kernel<<<1, 1, 0, s>>>(flag, value);
    return "";
  }
  const int rc = mem_ops().write(s, reinterpret_cast<uintptr_t>(flag), value, kWriteDefault);
  return rc == 0 ? "" : "cuStreamWriteValue32 failed: CUresult " + std::to_string(rc);
}
static inline std::string enqueue_flag_wait(const FlagMechanism& m, cudaStream_t s, const uint32_t* flag,
                                            const uint32_t* abort, uint32_t seq, unsigned long long max_ns) {
  if (!m.wait_ops) {
    flag_wait_kernel<<<1, 1, 0, s>>>(flag, abort, seq, max_ns);
    return "";
  }
  const int rc = mem_ops().wait(s, reinterpret_cast<uintptr_t>(flag), seq, kWaitGeq);
  return rc == 0 ? "" : "cuStreamWaitValue32 failed: CUresult " + std::to_string(rc);
}

}  // namespace pkb::gate
