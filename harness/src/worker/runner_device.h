// pkb-runner's GPU side (worker/runner_main.cpp): the heaps its monitors allocated, opened by CUDA IPC, a stream of
// its own, the device flag barrier, the call gate's flags (worker/call_gate.h), and a device-wide synchronize after
// every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pkb::runner {

class Device {
 public:
  // Opens rank q's heap from ipc_handles (cudaIpcMemHandle_t bytes, rank order) on `device`; throws pkb::Error.
  // flags: the gate's flag mechanism by name, the monitor's (runtime/call_gate.cuh FlagMechanism).
  Device(int device, const std::string& ipc_handles, int rank, int world, const std::string& flags);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::vector<void*>& bases() const { return bases_; }
  void* const* bases_device() const { return bases_device_; }
  void* stream() const { return stream_; }
  // The flag barrier among the runners on `flags` (world words at the same offset of every heap), on the stream.
  void barrier(uint32_t* flags);
  void zero(void* p, size_t bytes);
  // The call gate's flags (in the monitor's heap), on the stream: a wait until *flag reaches seq (or max_us passed,
  // kernels only), and a write.
  void wait_flag(const uint32_t* flag, uint32_t seq, double max_us);
  void write_flag(uint32_t* flag, uint32_t value);
  // "" or the error a device-wide synchronize surfaced.
  std::string synchronize();

 private:
  int rank_, world_;
  bool write_ops_ = false, wait_ops_ = false;
  uint32_t epoch_ = 0;
  std::vector<void*> bases_;
  void** bases_device_ = nullptr;
  void* stream_ = nullptr;
};

}  // namespace pkb::runner
