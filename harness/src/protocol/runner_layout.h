// What a monitor tells its runner (pkb-runner) about the call ahead of any: written into the control page as JSON by
// the monitor (worker/candidate_calls.cpp), read by the runner (worker/runner_main.cpp). Every key is spelled here
// only; a layout that lacks one, or holds one of the wrong type, does not parse (protocol/fields.h ProtocolError, a
// pkb::Error, naming it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pkb::protocol {

// One tensor of a slot, at `offset` in this rank's heap; dtype is the ABI's pkb_dtype.
struct LayoutTensor {
  std::string name;
  int dtype = 0;
  std::vector<int64_t> shape;
  size_t offset = 0;
  bool operator==(const LayoutTensor&) const = default;
};

struct LayoutGroup {
  std::string name;
  std::vector<int> members;
  bool operator==(const LayoutGroup&) const = default;
};

// GPUs: the heaps by CUDA IPC (cudaIpcMemHandle_t bytes, rank order, as hex) and the call gate's places.
struct RunnerCuda {
  int device = 0;
  std::string ipc_hex;
  size_t flags_offset = 0;             // the device barrier's flags, in every heap
  size_t gate_host_offset = 0;         // this rank's GateHostFlags, in its host segment
  size_t gate_offset = 0;              // this rank's GateDeviceFlags, in its heap
  std::string gate_flags = "kernels";  // the flags' mechanism: "kernels", "write_ops" or "stream_memory_ops"
  bool operator==(const RunnerCuda&) const = default;
};

struct RunnerLayout {
  bool ping_only = false;  // a runner with no library whose calls do nothing; nothing below is given
  std::string library;
  int rank = 0, world = 0, local_rank = 0;
  size_t heap_bytes = 0, sync_offset = 0, arena_offset = 0, host_bytes = 0;
  std::optional<RunnerCuda> cuda;
  std::vector<std::vector<LayoutTensor>> inputs;  // per slot
  std::vector<LayoutTensor> outputs;
  std::vector<std::pair<std::string, int64_t>> params;
  std::vector<LayoutGroup> groups;
  std::vector<std::string> hidden_paths, granted_paths;  // the runner's Landlock (worker/lockdown.h)
  bool operator==(const RunnerLayout&) const = default;
};

void to_json(nlohmann::json& j, const RunnerLayout& l);
void from_json(const nlohmann::json& j, RunnerLayout& l);  // throws pkb::Error naming what is missing or wrong

}  // namespace pkb::protocol
