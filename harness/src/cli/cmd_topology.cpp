// pkb topology list | show NAME | detect [-o FILE] [--name NAME]
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "core/files.h"
#include "cuda/topology_probe.h"
#include "spec/catalog.h"
#include "spec/topology.h"

namespace pkb::cli {
namespace {

struct TopologyOptions {
  std::string name;
  std::string output;
  std::string detect_name = "detected";
};

int run_list(const TopologyOptions&) {
  int rc = 0;
  for (const auto& path : list_topologies(repo_root() / "topologies")) {
    try {
      Topology t = load_topology(path);
      std::printf("%-10s %2d x %-24s %-8s %6.0f GB/s/GPU  %s\n", t.name.c_str(), t.gpu_count, t.gpu_name.c_str(),
                  t.link_kind.c_str(), t.per_gpu_link_GBps, t.nvswitch ? "NVSwitch" : "direct");
    } catch (const Error& e) {
      std::cerr << "pkb: error: " << e.what() << "\n";
      rc = 2;
    }
  }
  return rc;
}

int run_show(const TopologyOptions& o) {
  Topology t = find_topology(o.name);
  std::cout << t.to_json().dump(2) << "\n";
  return 0;
}

std::string today() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&now));
  return buf;
}

int run_detect(const TopologyOptions& o) {
  ProbeResult p = probe_devices();
  if (!p.error.empty()) throw Error("topology detect: " + p.error);
  std::string how = "measured by `pkb topology detect` on " + today();
  Topology t;
  t.name = o.detect_name;
  t.description = std::to_string(p.device_count) + "x " + p.gpu_name + ", detected by pkb";
  t.gpu_name = p.gpu_name;
  t.compute_capability = p.compute_capability;
  t.gpu_count = p.device_count;
  t.sm_count = p.sm_count;
  t.l2_bytes = p.l2_bytes;
  t.hbm_bytes = p.hbm_bytes;
  t.hbm_GBps = p.hbm_GBps;
  t.link_kind = p.peer_access ? "peer" : "none";
  t.peer_read_GBps = p.peer_read_GBps;
  t.peer_write_GBps = p.peer_write_GBps;
  t.copy_engine_GBps = p.copy_engine_GBps;
  t.per_gpu_link_GBps = std::max({p.peer_read_GBps, p.peer_write_GBps, p.copy_engine_GBps});
  t.nvswitch = false;   // not observable from the runtime API; edit if the machine has one
  t.multicast = false;  // never probed: multicast objects are off limits on shared machines
  for (const char* k : {"gpu.count", "gpu.sm_count", "gpu.l2_bytes", "gpu.hbm_bytes"})
    t.sources[k] = "cudaGetDeviceProperties, " + how;
  t.sources["gpu.hbm_GBps"] = "cudaMemcpyAsync device-to-device of 256 MiB, best of 5, read+write counted, " + how;
  t.sources["gpu.bf16_dense_TFLOPs"] = "not measured: fill in from the datasheet";
  t.sources["interconnect.links_per_gpu"] = "not observable from the CUDA runtime: fill in";
  t.sources["interconnect.link_GBps"] = "not measured: fill in from the link generation";
  t.sources["interconnect.per_gpu_link_GBps"] = "best of the measured peer rates below, " + how;
  t.sources["interconnect.peer_read_GBps"] = "kernel on GPU 0 copying 256 MiB from GPU 1, best of 5, " + how;
  t.sources["interconnect.peer_write_GBps"] = "kernel on GPU 0 copying 256 MiB to GPU 1, best of 5, " + how;
  t.sources["interconnect.copy_engine_GBps"] = "cudaMemcpyPeerAsync GPU 0 -> GPU 1 of 256 MiB, best of 5, " + how;
  std::string text = t.to_json().dump(2) + "\n";
  if (o.output.empty()) {
    std::cout << text;
  } else {
    write_file_atomically(o.output, text);
    std::cerr << "wrote " << o.output << "\n";
  }
  return 0;
}

}  // namespace

void add_topology_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<TopologyOptions>();
  CLI::App* cmd = app.add_subcommand("topology", "Machine descriptions used by prompts and rooflines");
  cmd->require_subcommand(1);
  cmd->add_subcommand("list", "Known topologies")->callback([o, &action] { action = [o] { return run_list(*o); }; });
  CLI::App* show = cmd->add_subcommand("show", "Print one topology");
  show->add_option("name", o->name, "Topology name (file stem)")->required();
  show->callback([o, &action] { action = [o] { return run_show(*o); }; });
  CLI::App* detect = cmd->add_subcommand("detect", "Measure this GPU node and write a topology file");
  detect->add_option("-o,--output", o->output, "Write here instead of stdout");
  detect->add_option("--name", o->detect_name, "Name recorded in the file");
  detect->callback([o, &action] { action = [o] { return run_detect(*o); }; });
}

}  // namespace pkb::cli
