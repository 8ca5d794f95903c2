// Where a job runs: GPUs (CUDA, .cu candidates, NCCL) or CPU ranks (.cpp candidates, shared memory, MPI). Named once
// (core/enum_names.h) for the command line, the rank programs' flags and the records.
#pragma once

#include <utility>

#include "core/enum_names.h"

namespace pkb {

enum class DeviceKind { cpu, cuda };
template <>
struct EnumNames<DeviceKind> {
  static constexpr std::pair<DeviceKind, const char*> values[] = {{DeviceKind::cpu, "cpu"}, {DeviceKind::cuda, "cuda"}};
};

}  // namespace pkb
