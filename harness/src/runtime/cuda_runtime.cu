// The CUDA runtime for candidates and timed references: heap via cudaMalloc + CUDA IPC (peers map each other's
// heap over NVLink), events for per-iteration timing, and a one-block flag barrier kernel on the stream.
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "../../include/pkb/device.cuh"
#include "core/error.h"
#include "runtime/runtime.h"

namespace pkb {
namespace {

void cuda_check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorString(rc));
}

__global__ void barrier_kernel(uint32_t* flags, void* const* bases, int rank, int world, uint32_t epoch) {
  pkb_barrier(flags, bases, rank, world, epoch);
}

// Spins one thread until the GPU's global nanosecond timer has advanced by `ns` (not SM cycles: independent of
// the clock the SM runs at).
__global__ void hold_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
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
    MPI_Barrier(comm_);
  }
  ~CudaRuntime() override {
    cudaDeviceSynchronize();
    for (int q = 0; q < world_; ++q)
      if (q != rank_ && bases_[q]) cudaIpcCloseMemHandle(bases_[q]);
    cudaFree(bases_[rank_]);
    cudaFree(bases_device_);
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
  void hold(double us) override {
    hold_kernel<<<1, 1, 0, stream_>>>(static_cast<unsigned long long>(us * 1e3));
    cuda_check(cudaGetLastError(), "hold kernel launch");
  }
  void* const* heap_bases_device() const override { return static_cast<void* const*>(bases_device_); }
  void barrier() override {
    barrier_kernel<<<1, 32, 0, stream_>>>(barrier_flags_, static_cast<void* const*>(bases_device_), rank_, world_,
                                          ++barrier_epoch_);
    cuda_check(cudaGetLastError(), "barrier kernel launch");
  }

 private:
  std::vector<void*> private_;
  int device_ = 0;
  bool owns_stream_ = true;
  cudaStream_t stream_ = nullptr;  // nullptr: the legacy default stream
  void** bases_device_ = nullptr;
  std::vector<cudaEvent_t> events_;
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
