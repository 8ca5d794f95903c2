// A machine kind: GPUs, memory and interconnect with real numbers, each with its source. Prompts render it as the
// hardware context and scoring uses it for rooflines. topologies/README.md documents the fields.
#pragma once

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace pkb {

struct Topology {
  std::string name, description;
  // GPU
  std::string gpu_name, compute_capability;
  int gpu_count = 0, sm_count = 0;
  double l2_bytes = 0, hbm_bytes = 0;
  double hbm_GBps = 0;           // achievable device-to-device copy bandwidth, read + write counted
  double bf16_dense_TFLOPs = 0;  // dense bf16 tensor-core rate
  double fp32_TFLOPs = 0;        // fp32 on CUDA cores (PyTorch's default: no TF32); 0 = unknown
  // Interconnect
  std::string link_kind;  // "nvlink4", "nvlink5", "pcie5"
  int links_per_gpu = 0;
  double link_GBps = 0;          // one link, one direction
  double peer_read_GBps = 0;     // SM-driven loads from one peer, measured or documented
  double peer_write_GBps = 0;    // SM-driven stores to one peer
  double copy_engine_GBps = 0;   // cudaMemcpyPeer, one direction
  double per_gpu_link_GBps = 0;  // all of one GPU's links, one direction
  bool nvswitch = false, multicast = false;
  std::map<std::string, std::string> sources;  // field -> where the number comes from

  // The per-GPU bandwidth a roofline should assume for data leaving or entering over links, one direction.
  double roofline_link_GBps() const;
  // The math rate a roofline of that float dtype should assume (TFLOP/s): fp32 runs cannot use the bf16 tensor
  // cores' rate. 0 when the topology does not say.
  double math_TFLOPs(DType float_dtype) const;

  nlohmann::json to_json() const;
  static Topology from_json(const nlohmann::json& j, const std::string& where);
};

// Throws pkb::Error naming the file and field (missing field, number without a source, ...).
Topology load_topology(const std::filesystem::path& file);
std::vector<std::filesystem::path> list_topologies(const std::filesystem::path& dir);
// topologies/NAME.json under the repo root; throws if absent, listing the ones that exist.
Topology find_topology(const std::string& name);

// The model of this machine's first GPU as the driver names it ("NVIDIA H200"), read from
// /proc/driver/nvidia/gpus without initializing CUDA; "" without an NVIDIA driver.
std::string local_gpu_model();

// Whether `t` describes the GPU the driver calls `gpu_model`: the driver may add a memory size ("NVIDIA H100 80GB
// HBM3" against a topology's "NVIDIA H100"), so a topology's gpu.name that begins the model's name matches.
inline bool describes_gpu(const Topology& t, const std::string& gpu_model) {
  return !gpu_model.empty() && gpu_model.rfind(t.gpu_name, 0) == 0;
}
// The topology rooflines use where none is named: the one of `gpu_model`'s GPU (a topology's gpu.name is a prefix of
// the driver's model name; the fewest GPUs first, then by name), else h200_2. A roofline takes only per-GPU and
// per-link rates from it, so its GPU count does not matter here.
std::string default_roofline_topology(const std::string& gpu_model = local_gpu_model());
// `name`, or default_roofline_topology() where it is empty.
inline std::string roofline_topology(const std::string& name) {
  return name.empty() ? default_roofline_topology() : name;
}

}  // namespace pkb
