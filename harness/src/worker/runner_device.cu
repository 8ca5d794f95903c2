#include <cuda_runtime.h>

#include <cstring>

#include "../../include/pkb/device.cuh"
#include "core/error.h"
#include "runtime/call_gate.cuh"
#include "worker/runner_device.h"

namespace pkb::runner {
namespace {

void check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw Error(std::string(what) + ": " + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc));
}

__global__ void runner_barrier_kernel(uint32_t* flags, void* const* bases, int rank, int world, uint32_t epoch) {
  pkb_barrier(flags, bases, rank, world, epoch);
}

}  // namespace

Device::Device(int device, const std::string& ipc_handles, int rank, int world, const std::string& flags)
    : rank_(rank), world_(world) {
  const gate::FlagMechanism m = gate::flag_mechanism_named(flags.c_str());
  write_ops_ = m.write_ops, wait_ops_ = m.wait_ops;
  if ((write_ops_ || wait_ops_) && !gate::mem_ops().available())
    throw Error("the monitor's gate uses stream memory operations; the driver has none here");
  if (ipc_handles.size() != sizeof(cudaIpcMemHandle_t) * static_cast<size_t>(world))
    throw Error("the monitor gave " + std::to_string(ipc_handles.size()) + " bytes of IPC handles for " +
                std::to_string(world) + " ranks");
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaFree(nullptr), "creating the CUDA context");
  bases_.assign(world, nullptr);
  for (int q = 0; q < world; ++q) {
    cudaIpcMemHandle_t h;
    std::memcpy(&h, ipc_handles.data() + q * sizeof h, sizeof h);
    check(cudaIpcOpenMemHandle(&bases_[q], h, cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
  }
  check(cudaMalloc(&bases_device_, world * sizeof(void*)), "cudaMalloc(heap table)");
  check(cudaMemcpy(bases_device_, bases_.data(), world * sizeof(void*), cudaMemcpyHostToDevice), "cudaMemcpy");
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = s;
}

Device::~Device() {
  cudaDeviceSynchronize();
  for (void* b : bases_)
    if (b) cudaIpcCloseMemHandle(b);
  cudaFree(bases_device_);
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void Device::barrier(uint32_t* flags) {
  runner_barrier_kernel<<<1, 32, 0, static_cast<cudaStream_t>(stream_)>>>(
      flags, static_cast<void* const*>(bases_device_), rank_, world_, ++epoch_);
}

void Device::zero(void* p, size_t bytes) {
  cudaMemsetAsync(p, 0, bytes, static_cast<cudaStream_t>(stream_));
  cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
}

void Device::wait_flag(const uint32_t* flag, uint32_t seq, double max_us) {
  const auto max_ns = static_cast<unsigned long long>(max_us * 1e3);
  if (std::string err = gate::enqueue_flag_wait({write_ops_, wait_ops_}, static_cast<cudaStream_t>(stream_), flag,
                                                nullptr, seq, max_ns);
      !err.empty())
    throw Error(err);
}

void Device::write_flag(uint32_t* flag, uint32_t value) {
  if (std::string err =
          gate::enqueue_flag_write({write_ops_, wait_ops_}, static_cast<cudaStream_t>(stream_), flag, value);
      !err.empty())
    throw Error(err);
}

std::string Device::synchronize() {
  cudaError_t rc = cudaDeviceSynchronize();
  if (rc == cudaSuccess) rc = cudaGetLastError();
  return rc == cudaSuccess ? "" : std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc);
}

}  // namespace pkb::runner
