#include <cuda_runtime.h>

#include <string>

#include "cuda/topology_probe.h"

namespace pkb {
namespace {

#define PROBE_CHECK(expr)                                            \
  do {                                                               \
    cudaError_t rc_ = (expr);                                        \
    if (rc_ != cudaSuccess) {                                        \
      r.error = std::string(#expr) + ": " + cudaGetErrorString(rc_); \
      return r;                                                      \
    }                                                                \
  } while (0)

// Grid-stride 16-byte copy; run on GPU 0 with src or dst on the peer, it measures SM-driven NVLink traffic.
__global__ void copy_kernel(const int4* __restrict__ src, int4* __restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n; i += size_t{gridDim.x} * blockDim.x)
    dst[i] = src[i];
}

// Median-free but warm: one warm-up, then the best of 5 timed repetitions.
template <class Fn>
double best_seconds(cudaStream_t s, Fn&& fn) {
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  fn();
  cudaStreamSynchronize(s);
  float best = 1e30f;
  for (int i = 0; i < 5; ++i) {
    cudaEventRecord(a, s);
    fn();
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    best = ms < best ? ms : best;
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return best / 1e3;
}

}  // namespace

ProbeResult probe_devices(size_t bytes) {
  ProbeResult r;
  PROBE_CHECK(cudaGetDeviceCount(&r.device_count));
  if (r.device_count == 0) {
    r.error = "no CUDA device visible";
    return r;
  }
  cudaDeviceProp p{};
  PROBE_CHECK(cudaGetDeviceProperties(&p, 0));
  r.gpu_name = p.name;
  r.compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor);
  r.sm_count = p.multiProcessorCount;
  r.l2_bytes = p.l2CacheSize;
  r.hbm_bytes = static_cast<double>(p.totalGlobalMem);

  PROBE_CHECK(cudaSetDevice(0));
  cudaStream_t s;
  PROBE_CHECK(cudaStreamCreate(&s));
  void *a = nullptr, *b = nullptr;
  PROBE_CHECK(cudaMalloc(&a, bytes));
  PROBE_CHECK(cudaMalloc(&b, bytes));
  PROBE_CHECK(cudaMemset(a, 1, bytes));
  r.hbm_GBps = 2.0 * bytes / best_seconds(s, [&] { cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s); }) / 1e9;

  if (r.device_count >= 2) {
    int can = 0;
    PROBE_CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
    r.peer_access = can != 0;
    if (r.peer_access) {
      void* remote = nullptr;
      PROBE_CHECK(cudaSetDevice(1));
      PROBE_CHECK(cudaMalloc(&remote, bytes));
      PROBE_CHECK(cudaMemset(remote, 2, bytes));
      PROBE_CHECK(cudaDeviceEnablePeerAccess(0, 0));
      PROBE_CHECK(cudaSetDevice(0));
      PROBE_CHECK(cudaDeviceEnablePeerAccess(1, 0));
      r.copy_engine_GBps = bytes / best_seconds(s, [&] { cudaMemcpyPeerAsync(remote, 1, a, 0, bytes, s); }) / 1e9;
      size_t n = bytes / sizeof(int4);
      int blocks = 4 * p.multiProcessorCount;
      r.peer_read_GBps =
          bytes /
          best_seconds(
              s,
              [&] { copy_kernel<<<blocks, 512, 0, s>>>(static_cast<const int4*>(remote), static_cast<int4*>(b), n); }) /
          1e9;
      r.peer_write_GBps =
          bytes /
          best_seconds(
              s,
              [&] { copy_kernel<<<blocks, 512, 0, s>>>(static_cast<const int4*>(a), static_cast<int4*>(remote), n); }) /
          1e9;
      PROBE_CHECK(cudaGetLastError());
      cudaFree(remote);
    }
  }
  cudaFree(a);
  cudaFree(b);
  cudaStreamDestroy(s);
  return r;
}

}  // namespace pkb
