#include "launch/gpus.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "launch/process.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;

struct MpsDaemon {
  bool tried = false, running = false;
  std::string pipe_dir, log_dir, why;
};

MpsDaemon& daemon_state() {
  static MpsDaemon d;
  return d;
}

void stop_daemon() {
  MpsDaemon& d = daemon_state();
  if (!d.running) return;
  ProcessOptions po;
  po.timeout_s = 20;
  po.env = {{"CUDA_MPS_PIPE_DIRECTORY", d.pipe_dir}, {"CUDA_MPS_LOG_DIRECTORY", d.log_dir}};
  try {
    run_process({"sh", "-c", "echo quit | nvidia-cuda-mps-control"}, po);
  } catch (const std::exception&) {  // at exit: the daemon goes with the machine's next reboot at worst
  }
  d.running = false;
  std::error_code ec;
  fs::remove_all(fs::path(d.pipe_dir).parent_path(), ec);
}

// Starts the control daemon with directories of our own, so that it neither meets nor disturbs a daemon of the
// machine's. Returns "" or why it could not.
std::string start_daemon(MpsDaemon& d) {
  fs::path base = fs::temp_directory_path() / ("pkb-mps-" + std::to_string(getpid()));
  d.pipe_dir = (base / "pipe").string();
  d.log_dir = (base / "log").string();
  // PKB_MPS_LOG_DIR keeps the daemon's logs (control.log, server.log: which clients connected) past pkb's exit.
  if (const char* keep = getenv("PKB_MPS_LOG_DIR"); keep && *keep)
    d.log_dir = (fs::path(keep) / std::to_string(getpid())).string();
  std::error_code ec;
  fs::create_directories(d.pipe_dir, ec);
  fs::create_directories(d.log_dir, ec);
  ProcessOptions po;
  po.timeout_s = 30;
  po.env = {{"CUDA_MPS_PIPE_DIRECTORY", d.pipe_dir}, {"CUDA_MPS_LOG_DIRECTORY", d.log_dir}};
  po.stderr_path = base / "start.err";
  ProcessResult r;
  try {
    // The daemon is what `-d` leaves behind: run_process would kill it, and every client would run without MPS.
    r = start_daemon_process({"nvidia-cuda-mps-control", "-d"}, po);
  } catch (const std::exception& e) {
    return e.what();
  }
  if (!r.ok()) return "nvidia-cuda-mps-control -d: " + r.summary() + " " + file_tail(base / "start.err", 300);
  std::atexit(stop_daemon);
  return "";
}

}  // namespace

std::vector<std::string> visible_gpus() {
  std::error_code ec;
  int listed = 0;
  for (const auto& e : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) (void)e, ++listed;
  std::vector<std::string> ids;
  if (const char* env = getenv("CUDA_VISIBLE_DEVICES")) {
    std::stringstream ss(env);
    for (std::string id; std::getline(ss, id, ',');) {
      if (id.empty() || id == "-1") break;  // CUDA stops at the first invalid entry
      ids.push_back(id);
    }
    if (static_cast<int>(ids.size()) > listed) ids.resize(listed);
    return ids;
  }
  for (int i = 0; i < listed; ++i) ids.push_back(std::to_string(i));
  return ids;
}

std::string gpus_filled(const std::vector<std::string>& ids, int world, int ranks_per_gpu) {
  int used = (world + std::max(ranks_per_gpu, 1) - 1) / std::max(ranks_per_gpu, 1);
  std::string list;
  for (int i = 0; i < used && i < static_cast<int>(ids.size()); ++i) list += (i ? "," : "") + ids[i];
  return list;
}

GpuSharing plan_gpu_sharing(int world, int gpus, int ranks_per_gpu_wanted, bool process_pairs) {
  GpuSharing s;
  if (gpus <= 0) return s;
  s.ranks_per_gpu = std::max((world + gpus - 1) / gpus, std::max(ranks_per_gpu_wanted, 1));
  if (s.ranks_per_gpu <= 1 && !process_pairs) return s;
  if (ranks_per_gpu_wanted > 1) {  // asked for: the job gets only the GPUs its ranks fill, so they really share
    std::string list = gpus_filled(visible_gpus(), world, s.ranks_per_gpu);
    if (!list.empty()) s.env["CUDA_VISIBLE_DEVICES"] = list;
  }
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  MpsDaemon& d = daemon_state();
  if (!d.tried) {
    d.tried = true;
    d.why = start_daemon(d);
    d.running = d.why.empty();
  }
  s.mps = d.running;
  if (s.mps) {
    s.env["CUDA_MPS_PIPE_DIRECTORY"] = d.pipe_dir;
    s.env["CUDA_MPS_LOG_DIRECTORY"] = d.log_dir;
    // Each rank gets its share of the SMs, and cudaDevAttrMultiProcessorCount reports that share: kernels that
    // size a grid as "one block per SM" then fit beside the other ranks' instead of waiting for SMs forever.
    s.env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(std::max(1, 100 / s.ranks_per_gpu));
  }
  if (s.ranks_per_gpu <= 1) {  // nothing shared between ranks: no contention to note
    if (!s.mps) s.note = "monitor and runner without MPS (" + d.why + "): each hand-over switches contexts";
    return s;
  }
  s.note = std::to_string(s.ranks_per_gpu) + " ranks share each GPU (" +
           (s.mps ? "MPS" : "no MPS, time-sliced and slow: " + d.why) +
           "): a functional check; times measure contention, not the kernel";
  return s;
}

}  // namespace pkb
