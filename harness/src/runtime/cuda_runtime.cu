// The CUDA runtime for candidates and timed references: heap via cudaMalloc + CUDA IPC (peers map each other's
// heap over NVLink), events for per-iteration timing, and a one-block flag barrier kernel on the stream.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "../../include/pkb/device.cuh"
#include "core/error.h"
#include "runtime/call_gate.cuh"
#include "runtime/runtime.h"

namespace pkb {
namespace {

void cuda_check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(rc));
}

__global__ void barrier_kernel(uint32_t* flags, void* const* bases, int rank, int world, uint32_t epoch) {
  pkb_barrier(flags, bases, rank, world, epoch);
}

// The hold: blocks of kHoldThreads threads, as many per SM as fit, every thread spinning until the GPU's global
// nanosecond timer advanced by `ns` since it started (not SM cycles: independent of the clock the SM runs at). With
// every thread slot taken, no other kernel (another stream's, a persistent one) can start while it spins, and one
// that was still running when it began delays some of its blocks: each block traces when it started, and the longest
// gap between two of its timer reads (a context switch to another context stops all of them).
constexpr int kHoldThreads = 256;
struct DeviceHoldTrace {
  unsigned long long first_start, last_start, longest_gap;  // ns of %globaltimer
};

__global__ void __launch_bounds__(kHoldThreads) hold_kernel(unsigned long long ns, DeviceHoldTrace* trace) {
  unsigned long long t0, t, prev, gap = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  if (threadIdx.x == 0) {
    atomicMin(&trace->first_start, t0);
    atomicMax(&trace->last_start, t0);
  }
  prev = t0;
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    gap = t - prev > gap ? t - prev : gap;
    prev = t;
  } while (t - t0 < ns);
  if (threadIdx.x == 0) atomicMax(&trace->longest_gap, gap);
}

__global__ void hold_trace_reset(DeviceHoldTrace* traces, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    traces[i] = {~0ull, 0ull, 0ull};
}

// The generator on the device: element i of the draw, grid-striding (core/element_draw.h is the host's definition).
__global__ void draw_kernel(void* dst, ElementDraw d, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    element_draw::draw_element(d, dst, i);
}

// Sets *differ when two buffers disagree anywhere: 8-byte words, then the tail's bytes; no early exit.
__global__ void differ_kernel(const unsigned char* a, const unsigned char* b, size_t bytes, unsigned* differ) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x, first = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t words = bytes / 8;
  const auto *wa = reinterpret_cast<const unsigned long long*>(a), *wb = reinterpret_cast<const unsigned long long*>(b);
  unsigned long long diff = 0;
  for (size_t i = first; i < words; i += stride) diff |= wa[i] ^ wb[i];
  for (size_t i = words * 8 + first; i < bytes; i += stride) diff |= a[i] ^ b[i];
  if (diff) *differ = 1;
}

class CudaRuntime final : public Runtime {
 public:
  CudaRuntime(MPI_Comm comm, size_t bytes, bool legacy_stream) : Runtime(comm), owns_stream_(!legacy_stream) {
    cuda_check(cudaGetDevice(&device_), "cudaGetDevice");
    if (owns_stream_) cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    heap_size_ = bytes;
    void* local = nullptr;
    cuda_check(cudaMalloc(&local, bytes), "cudaMalloc(symmetric heap)");
    cuda_check(cudaMemset(local, 0, bytes), "cudaMemset(symmetric heap)");
    cudaIpcMemHandle_t mine;
    cuda_check(cudaIpcGetMemHandle(&mine, local), "cudaIpcGetMemHandle");
    std::vector<cudaIpcMemHandle_t> all(world_);
    MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, comm_);
    ipc_handles_.assign(reinterpret_cast<const char*>(all.data()), all.size() * sizeof mine);
    bases_.assign(world_, nullptr);
    for (int q = 0; q < world_; ++q) {
      if (q == rank_) {
        bases_[q] = local;
      } else {
        cuda_check(cudaIpcOpenMemHandle(&bases_[q], all[q], cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
      }
    }
    cuda_check(cudaMalloc(&bases_device_, world_ * sizeof(void*)), "cudaMalloc(heap table)");
    cuda_check(cudaMemcpy(bases_device_, bases_.data(), world_ * sizeof(void*), cudaMemcpyHostToDevice), "cudaMemcpy");
    barrier_flags_ = static_cast<uint32_t*>(alloc(world_ * sizeof(uint32_t), true));
    // The hold's grid: every SM at its thread limit (under MPS, the SMs this client may use).
    int sms = 0, threads_per_sm = 0, per_sm = 0;
    cuda_check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device_), "cudaDeviceGetAttribute");
    cuda_check(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device_),
               "cudaDeviceGetAttribute");
    cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hold_kernel, kHoldThreads, 0),
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    hold_blocks_ = std::max(1, sms * per_sm);
    hold_fills_ = per_sm * kHoldThreads == threads_per_sm;
    cuda_check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gate::gate_hold_kernel, gate::kHoldThreads, 0),
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    gate_blocks_ = std::max(1, sms * per_sm);
    MPI_Barrier(comm_);
  }
  ~CudaRuntime() override {
    cudaDeviceSynchronize();
    if (waited_) cudaEventDestroy(waited_);
    if (release_stream_) cudaStreamDestroy(release_stream_);
    for (int q = 0; q < world_; ++q)
      if (q != rank_ && bases_[q]) cudaIpcCloseMemHandle(bases_[q]);
    cudaFree(bases_[rank_]);
    cudaFree(bases_device_);
    cudaFree(hold_traces_);
    cudaFree(gate_state_);
    for (void* p : registered_) cudaHostUnregister(p);
    for (void* p : private_) cudaFree(p);
    for (auto e : events_) cudaEventDestroy(e);
    if (owns_stream_) cudaStreamDestroy(stream_);
  }
  bool is_cuda() const override { return true; }
  int device() const override { return device_; }
  void* stream() const override { return stream_; }
  void copy(void* dst, const void* src, size_t bytes) override {
    cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync");
    cuda_check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void fill(void* dst, uint8_t byte, size_t bytes) override {
    cuda_check(cudaMemsetAsync(dst, byte, bytes, stream_), "cudaMemsetAsync");
  }
  void copy_async(void* dst, const void* src, size_t bytes) override {
    cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_), "cudaMemcpyAsync");
  }
  void draw(void* dst, const ElementDraw& d, int64_t n) override {
    if (n <= 0) return;
    constexpr int kThreads = 256;
    const int64_t blocks = std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t{hold_blocks_} * 4);
    draw_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream_>>>(dst, d, n);
    cuda_check(cudaGetLastError(), "draw_kernel launch");
  }
  // The heap's and private buffers start 256-byte aligned, so the words are aligned where callers pass block starts;
  // an unaligned pair is compared on the host.
  bool same_bytes(const void* a, const void* b, size_t bytes) override {
    if ((reinterpret_cast<uintptr_t>(a) | reinterpret_cast<uintptr_t>(b)) % 8 != 0) {
      std::vector<unsigned char> x(bytes), y(bytes);
      copy(x.data(), a, bytes), copy(y.data(), b, bytes);
      return Runtime::same_bytes(x.data(), y.data(), bytes);
    }
    if (!differ_flag_) differ_flag_ = static_cast<unsigned*>(private_alloc(sizeof(unsigned)));
    cuda_check(cudaMemsetAsync(differ_flag_, 0, sizeof(unsigned), stream_), "cudaMemsetAsync");
    const size_t blocks = std::clamp<size_t>(bytes / 8 / 256 + 1, 1, static_cast<size_t>(hold_blocks_) * 4);
    differ_kernel<<<static_cast<unsigned>(blocks), 256, 0, stream_>>>(
        static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), bytes, differ_flag_);
    cuda_check(cudaGetLastError(), "differ_kernel launch");
    unsigned differ = 0;
    copy(&differ, differ_flag_, sizeof differ);
    return differ == 0;
  }
  void* private_alloc(size_t bytes) override {
    void* p = nullptr;
    cuda_check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc(private)");
    private_.push_back(p);
    return p;
  }
  std::string synchronize() override {
    cudaError_t rc = cudaDeviceSynchronize();
    if (rc == cudaSuccess) rc = cudaGetLastError();
    return rc == cudaSuccess ? "" : std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
  }
  std::string stream_synchronize() override {
    cudaError_t rc = cudaStreamSynchronize(stream_);
    return rc == cudaSuccess ? "" : std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
  }
  void timers_reserve(int n) override {
    while (static_cast<int>(events_.size()) < n) {
      cudaEvent_t e;
      cuda_check(cudaEventCreate(&e), "cudaEventCreate");
      events_.push_back(e);
    }
  }
  void record(int i) override { cuda_check(cudaEventRecord(events_[i], stream_), "cudaEventRecord"); }
  double elapsed_ms(int i, int j) override {
    float ms = 0;
    cuda_check(cudaEventElapsedTime(&ms, events_[i], events_[j]), "cudaEventElapsedTime");
    return ms;
  }
  bool reached(int i) override {
    cudaError_t rc = cudaEventQuery(events_[i]);
    if (rc == cudaErrorNotReady) return false;
    // Any other error surfaces again at the next synchronize, which reports it; until then count it as reached.
    if (rc != cudaSuccess) cudaGetLastError();
    return true;
  }
  void hold_slots_reserve(int n) override {
    if (n > hold_slots_) {
      cudaFree(hold_traces_);
      hold_traces_ = nullptr;
      cuda_check(cudaMalloc(&hold_traces_, n * sizeof(DeviceHoldTrace)), "cudaMalloc(hold traces)");
      hold_slots_ = n;
    }
    hold_trace_reset<<<(n + 255) / 256, 256, 0, stream_>>>(hold_traces_, n);
    cuda_check(cudaGetLastError(), "hold trace reset launch");
  }
  void hold(double us, int slot) override {
    if (slot < 0 || slot >= hold_slots_) throw Error("hold slot " + std::to_string(slot) + " was not reserved");
    hold_kernel<<<hold_blocks_, kHoldThreads, 0, stream_>>>(static_cast<unsigned long long>(us * 1e3),
                                                            hold_traces_ + slot);
    cuda_check(cudaGetLastError(), "hold kernel launch");
  }
  bool hold_fills_device() const override { return hold_fills_; }
  std::vector<HoldTrace> hold_traces(int n) override {
    std::vector<DeviceHoldTrace> raw(std::min(n, hold_slots_));
    if (!raw.empty())
      cuda_check(cudaMemcpy(raw.data(), hold_traces_, raw.size() * sizeof raw[0], cudaMemcpyDeviceToHost),
                 "cudaMemcpy(hold traces)");
    std::vector<HoldTrace> out(n);
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i].last_start < raw[i].first_start) continue;  // that hold never ran
      out[i].start_spread_us = (raw[i].last_start - raw[i].first_start) / 1e3;
      out[i].longest_gap_us = raw[i].longest_gap / 1e3;
    }
    return out;
  }
  void* map_host_memory(void* host, size_t bytes) override {
    cuda_check(cudaHostRegister(host, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable), "cudaHostRegister");
    registered_.push_back(host);
    void* device = nullptr;
    cuda_check(cudaHostGetDevicePointer(&device, host, 0), "cudaHostGetDevicePointer");
    if (!gate_state_) {  // the holds' release flag and trace: this process's memory, out of the runner's reach
      cuda_check(cudaMalloc(&gate_state_, sizeof(GateState)), "cudaMalloc(gate state)");
      cuda_check(cudaMemset(gate_state_, 0, sizeof(GateState)), "cudaMemset(gate state)");
    }
    return device;
  }
  void gate_hold(const uint32_t* armed, uint32_t seq, double max_us) override {
    if (!gate_state_) throw Error("gate_hold before map_host_memory");
    gate::gate_hold_kernel<<<gate_blocks_, gate::kHoldThreads, 0, stream_>>>(
        armed, &gate_state_->release, seq, static_cast<unsigned long long>(max_us * 1e3), &gate_state_->trace);
    cuda_check(cudaGetLastError(), "gate hold launch");
  }
  void flag_write(uint32_t* flag, uint32_t value) override {
    if (std::string err = gate::enqueue_flag_write(flags_, stream_, flag, value); !err.empty()) throw Error(err);
    cuda_check(cudaGetLastError(), "flag write launch");
  }
  void flag_wait(const uint32_t* flag, const uint32_t* abort, uint32_t seq, double max_us) override {
    const auto max_ns = static_cast<unsigned long long>(max_us * 1e3);
    if (std::string err = gate::enqueue_flag_wait(flags_, stream_, flag, abort, seq, max_ns); !err.empty())
      throw Error(err);
    cuda_check(cudaGetLastError(), "flag wait launch");
    if (!flags_.wait_ops) return;
    // What flag_release looks at: whether the stream has passed this wait.
    if (!waited_) cuda_check(cudaEventCreateWithFlags(&waited_, cudaEventDisableTiming), "cudaEventCreate");
    cuda_check(cudaEventRecord(waited_, stream_), "cudaEventRecord");
  }
  // A stream-op wait knows no abort: if the stream is still held by the last wait 2 ms after the call ended (its
  // process died, or never wrote the flag), the flag is written from a stream of its own. An honest runner's flag was
  // written before it stopped, so the wait has passed: nothing is written that could overtake a later call's flag.
  void flag_release(uint32_t* flag, uint32_t value) override {
    if (!flags_.wait_ops || !waited_) return;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
    while (cudaEventQuery(waited_) == cudaErrorNotReady && std::chrono::steady_clock::now() < give_up) usleep(10);
    if (cudaEventQuery(waited_) != cudaErrorNotReady) return;
    if (!release_stream_)
      cuda_check(cudaStreamCreateWithFlags(&release_stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    // wait_ops comes with write_ops (stream_memory_ops): a memory operation, which no held SM can delay.
    if (std::string err = gate::enqueue_flag_write(flags_, release_stream_, flag, value); !err.empty())
      throw Error(err + " (release)");
  }
  const char* flag_mechanism() const override { return flags_.name(); }
  GateTrace gate_trace() override {
    GateTrace out;
    if (!gate_state_) return out;
    GateState s{};
    copy(&s, gate_state_, sizeof s);
    out.holds = static_cast<long long>(s.trace.holds);
    out.timeouts = static_cast<long long>(s.trace.timeouts);
    out.mean_wait_us = s.trace.holds ? s.trace.wait_ns_sum / 1e3 / s.trace.holds : 0;
    out.max_wait_us = s.trace.wait_ns_max / 1e3;
    return out;
  }
  void* const* heap_bases_device() const override { return static_cast<void* const*>(bases_device_); }
  std::string heap_ipc_handles() const override { return ipc_handles_; }
  void barrier() override {
    barrier_kernel<<<1, 32, 0, stream_>>>(barrier_flags_, static_cast<void* const*>(bases_device_), rank_, world_,
                                          ++barrier_epoch_);
    cuda_check(cudaGetLastError(), "barrier kernel launch");
  }

 private:
  std::vector<void*> private_;
  const gate::FlagMechanism flags_ = gate::chosen_flag_mechanism();
  cudaEvent_t waited_ = nullptr;           // after the last stream-op wait
  cudaStream_t release_stream_ = nullptr;  // where flag_release writes
  int device_ = 0;
  bool owns_stream_ = true;
  cudaStream_t stream_ = nullptr;  // nullptr: the legacy default stream
  void** bases_device_ = nullptr;
  std::vector<cudaEvent_t> events_;
  int hold_blocks_ = 1;
  unsigned* differ_flag_ = nullptr;  // same_bytes's answer, on the device
  bool hold_fills_ = false;
  DeviceHoldTrace* hold_traces_ = nullptr;
  int hold_slots_ = 0;
  struct GateState {
    uint32_t release;
    uint32_t pad[31];
    gate::HoldTrace trace;
  };
  GateState* gate_state_ = nullptr;
  int gate_blocks_ = 1;
  std::vector<void*> registered_;  // host memory mapped for the device (map_host_memory)
  std::string ipc_handles_;        // every rank's cudaIpcMemHandle_t, in rank order
};

}  // namespace

std::unique_ptr<Runtime> make_cuda_runtime(MPI_Comm comm, size_t heap_bytes, bool legacy_stream) {
  return std::make_unique<CudaRuntime>(comm, heap_bytes, legacy_stream);
}

size_t cuda_l2_bytes() {
  int dev = 0, l2 = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess)
    return 0;
  return static_cast<size_t>(l2);
}

RuntimeVersions runtime_versions(int device) {
  RuntimeVersions v;
  int d = 0, r = 0, n = 0;
  if (cudaDriverGetVersion(&d) == cudaSuccess)
    v.driver = std::to_string(d / 1000) + "." + std::to_string(d % 1000 / 10);
  if (cudaRuntimeGetVersion(&r) == cudaSuccess)
    v.cuda_runtime = std::to_string(r / 1000) + "." + std::to_string(r % 1000 / 10);
  if (ncclGetVersion(&n) == ncclSuccess)
    v.nccl = std::to_string(n / 10000) + "." + std::to_string(n / 100 % 100) + "." + std::to_string(n % 100);
  cudaDeviceProp p{};
  if (device >= 0 && cudaGetDeviceProperties(&p, device) == cudaSuccess) v.gpu = p.name;
  return v;
}

}  // namespace pkb
