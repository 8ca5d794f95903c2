// Builds the launch of rank workers: one rank per GPU, or W oversubscribed ranks on the CPU, all on this node,
// started by mpirun or, where that is the site's way, as the tasks of a Slurm job step (srun).
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
  std::vector<std::string> argv;           // mpirun [flags] -np W -x VAR... program...
  std::map<std::string, std::string> env;  // set on mpirun and forwarded to every rank with -x
};

// Adds --allow-run-as-root when running as root, --oversubscribe, binding off, shared-memory transport only, and
// the NCCL safety settings (NVLink multicast stays off: NCCL_NVLS_ENABLE=0).
MpirunJob mpirun_job(const MpirunOptions& opts, const std::vector<std::string>& program);

// How rank jobs are started. srun runs the W ranks as one job step inside the current allocation (PMIx
// bootstrap). It applies to the jobs pkb runs outside the sandbox (references, validation, --no-sandbox): srun's
// tasks are started by slurmd, outside any sandbox pkb builds, and PMIx talks TCP to slurmstepd, which the
// sandbox's network namespace cuts off; so sandboxed candidate passes always run mpirun inside the sandbox.
enum class Launcher { mpirun, srun };
const char* launcher_name(Launcher l);
// "mpirun" or "srun"; throws pkb::Error naming the value otherwise.
Launcher parse_launcher(const std::string& name);
// The process-wide launcher: set_rank_launcher's, else $PKB_LAUNCHER, else mpirun (a site property, like the
// MPI installation itself, so it is not threaded through every job's options).
Launcher rank_launcher();
void set_rank_launcher(Launcher l);

// srun --overlap --nodes=1 --ntasks=W --mpi=pmix ... program: the ranks as one step of the allocation, with the
// environment of mpirun_job (MPI transport and NCCL settings as variables); $PKB_SRUN overrides the binary.
MpirunJob srun_job(const MpirunOptions& opts, const std::vector<std::string>& program);

// Directory holding the running executable (pkb and pkb-rank are built side by side).
std::filesystem::path executable_dir();

}  // namespace pkb
