// Measures what `pkb topology detect` writes: device properties and bandwidths between GPU 0 and GPU 1.
#pragma once

#include <string>

namespace pkb {

struct ProbeResult {
  std::string error;  // non-empty: nothing measured (no GPU, no peer access, ...)
  int device_count = 0;
  std::string gpu_name, compute_capability;
  int sm_count = 0;
  double l2_bytes = 0, hbm_bytes = 0;
  double hbm_GBps = 0;          // device-to-device copy, read + write counted
  bool peer_access = false;     // GPU 0 <-> GPU 1
  double copy_engine_GBps = 0;  // cudaMemcpyPeerAsync GPU 0 -> GPU 1
  double peer_read_GBps = 0;    // kernel on GPU 0 loading from GPU 1
  double peer_write_GBps = 0;   // kernel on GPU 0 storing to GPU 1
  int nvlink_count = -1;        // NVLinks between 0 and 1 if the driver reports them (-1 unknown)
};

ProbeResult probe_devices(size_t bytes = size_t{256} << 20);

}  // namespace pkb
