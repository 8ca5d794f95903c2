// Builds mpirun jobs for rank workers: one rank per GPU, or W oversubscribed ranks on the CPU.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace pkb {

struct MpirunOptions {
  int world = 1;
  bool cuda = false;
  std::map<std::string, std::string> env;  // extra variables forwarded to every rank
};

struct MpirunJob {
  std::vector<std::string> argv;             // mpirun [flags] -np W -x VAR... program...
  std::map<std::string, std::string> env;    // set on mpirun and forwarded to every rank with -x
};

// Adds --allow-run-as-root when running as root, --oversubscribe, binding off, shared-memory transport only, and
// the NCCL safety settings (NVLink multicast stays off: NCCL_NVLS_ENABLE=0).
MpirunJob mpirun_job(const MpirunOptions& opts, const std::vector<std::string>& program);

// Directory holding the running executable (pkb and pkb-rank are built side by side).
std::filesystem::path executable_dir();

}  // namespace pkb
