#include "launch/mpirun.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "core/cores.h"
#include "core/error.h"

#ifndef PKB_MPIRUN
#define PKB_MPIRUN "mpirun"
#endif

namespace pkb {

MpirunJob mpirun_job(const MpirunOptions& opts, const std::vector<std::string>& program) {
  MpirunJob job;
  job.env["NCCL_NVLS_ENABLE"] = "0";
  job.env["NCCL_DEBUG"] = getenv("NCCL_DEBUG") ? getenv("NCCL_DEBUG") : "WARN";
  // More ranks than cores: waiting ranks must yield or they starve the ones doing work. A setting in pkb's own
  // environment wins (scripts/test.sh: tests run side by side, so the cores are always oversubscribed).
  bool oversubscribed = opts.world > usable_cores();
  const char* yield = getenv("OMPI_MCA_mpi_yield_when_idle");
  job.env["OMPI_MCA_mpi_yield_when_idle"] = yield && *yield ? yield : (!opts.cuda && oversubscribed) ? "1" : "0";
  // Every rank is local: the remote launcher is never used, but Open MPI refuses to start when it cannot find
  // ssh or rsh, which a sandbox (or a minimal image) has not got.
  job.env["OMPI_MCA_plm_rsh_agent"] = "false";
  // Measurements (gpu_check.sh's gate step): the call gate's flag mechanism, an in-process candidate timed through it.
  for (const char* name : {"PKB_GATE_FLAGS", "PKB_GATE_IN_PROCESS"})
    if (const char* v = getenv(name)) job.env[name] = v;
  // pkb's rank programs allocate and free tensors and input copies of MiBs, and every 4 KiB page of a fresh mapping
  // faults: glibc's malloc asks for transparent huge pages instead (on the CI machine's paravirtualised kernel, a
  // validate shard's wall fell by a third). A setting in pkb's own environment is passed on instead. The candidate's
  // process (pkb-runner) starts with an empty environment and never sees either.
  const char* tunables = getenv("GLIBC_TUNABLES");
  job.env["GLIBC_TUNABLES"] = tunables && *tunables ? tunables : "glibc.malloc.hugetlb=1";
  for (const auto& [k, v] : opts.env) job.env[k] = v;

  job.argv = {PKB_MPIRUN};
  if (geteuid() == 0) job.argv.push_back("--allow-run-as-root");
  job.argv.insert(job.argv.end(), {"--oversubscribe", "--bind-to", "none", "-np", std::to_string(opts.world)});
  // Ranks never leave the node and MPI only ever sees host memory: shared memory through ob1, so no time goes into
  // probing network interfaces or UCX (which MPI_Init otherwise tries first: 0.2 s of wall per launch on the CI
  // machine).
  job.argv.insert(job.argv.end(), {"--mca", "btl", "self,vader", "--mca", "btl_vader_single_copy_mechanism", "none",
                                   "--mca", "pml", "ob1"});
  for (const auto& [k, v] : job.env) job.argv.insert(job.argv.end(), {"-x", k});
  if (getenv("CUDA_VISIBLE_DEVICES") && !job.env.count("CUDA_VISIBLE_DEVICES"))
    job.argv.insert(job.argv.end(), {"-x", "CUDA_VISIBLE_DEVICES"});
  job.argv.insert(job.argv.end(), program.begin(), program.end());
  return job;
}

const char* launcher_name(Launcher l) { return l == Launcher::srun ? "srun" : "mpirun"; }

Launcher parse_launcher(const std::string& name) {
  if (name == "mpirun") return Launcher::mpirun;
  if (name == "srun") return Launcher::srun;
  throw Error("launcher '" + name + "': expected mpirun or srun");
}

namespace {
std::atomic<int> chosen_launcher{-1};  // -1: not set, read $PKB_LAUNCHER
}

Launcher rank_launcher() {
  int l = chosen_launcher.load();
  if (l >= 0) return static_cast<Launcher>(l);
  const char* env = getenv("PKB_LAUNCHER");
  if (!env || !*env) return Launcher::mpirun;
  try {
    return parse_launcher(env);
  } catch (const Error& e) {
    throw Error(std::string("PKB_LAUNCHER: ") + e.what());
  }
}

void set_rank_launcher(Launcher l) { chosen_launcher = static_cast<int>(l); }

MpirunJob srun_job(const MpirunOptions& opts, const std::vector<std::string>& program) {
  MpirunJob job = mpirun_job(opts, program);  // for its environment
  // What mpirun gets as --mca flags, as Open MPI's environment variables.
  job.env["OMPI_MCA_btl"] = "self,vader";
  job.env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none";
  job.env["OMPI_MCA_pml"] = "ob1";
  const char* srun = getenv("PKB_SRUN");
  // --overlap: several evaluation slots (and pkb itself) share the allocation's CPUs and GPUs; pkb hands
  // each slot its GPUs through CUDA_VISIBLE_DEVICES; --overcommit: W CPU ranks on fewer CPUs, as mpirun
  // --oversubscribe. --kill-on-bad-exit: one failed rank ends the step, as
  // mpirun does, instead of leaving its peers blocked in a collective until the deadline.
  job.argv = {srun && *srun ? srun : "srun",
              "--overlap",
              "--nodes=1",
              "--ntasks=" + std::to_string(opts.world),
              "--mpi=pmix",
              "--overcommit",
              "--kill-on-bad-exit=1",
              "--cpu-bind=none",
              "--quiet",
              "--job-name=pkb-rank",
              "--export=ALL"};
  job.argv.insert(job.argv.end(), program.begin(), program.end());
  return job;
}

std::filesystem::path executable_dir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::current_path() : p.parent_path();
}

}  // namespace pkb
