// The sandbox that everything touching candidate code runs in (the compiler on untrusted source, and the candidate
// pass: mpirun with its W ranks, in one sandbox so CUDA IPC works between them). It is bubblewrap: its own user,
// PID, network (loopback only), IPC, UTS and cgroup namespaces; no capabilities; an empty environment apart from
// what the job names; stdin from /dev/null; the system directories read-only; writable only the job's scratch
// directory, a private /tmp and /dev/shm. Nothing else of the host is visible: not the reference cache, the run
// directory, other candidates, $HOME or the driver's environment. The PID namespace dies with its first process,
// so nothing a candidate starts outlives its job. The sandbox, not the lint, is the security boundary.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/process.h"

namespace pkb {

struct Sandbox {
  bool gpu = false;                              // bind the NVIDIA device nodes and /sys
  std::vector<std::filesystem::path> read_only;  // bound read-only at the same path
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> read_only_at;  // host path -> sandbox path
  std::vector<std::filesystem::path> writable;  // bound read-write at the same path (the job's scratch)
  std::map<std::string, std::string> env;       // the only variables inside besides PATH, HOME, TMPDIR, LANG
  std::filesystem::path cwd;                    // inside; default the first writable directory
  size_t tmpfs_bytes = size_t{1} << 30;         // size of /tmp and of /dev/shm each
};

// bwrap's command line that runs `argv` inside `box`. Start it with run_sandboxed, which clears bwrap's own
// environment (readable from inside through /proc) and opens the descriptor bwrap reports its namespace init on.
std::vector<std::string> sandbox_command(const Sandbox& box, const std::vector<std::string>& argv);

// Runs `argv` inside `box` (sandbox_command) under `po`. The sandbox is its own session, out of reach of the
// process-group kills run_process uses; bwrap reports its PID-namespace init (--info-fd), which run_process
// kills with the group (and the termination handler kills too), so no sandbox outlives its job or pkb, even
// where bwrap's own parent-death signal does not fire.
ProcessResult run_sandboxed(const Sandbox& box, const std::vector<std::string>& argv, ProcessOptions po);

// Why no sandbox can run here ("" when one can): bwrap missing, or unable to create namespaces. Probed once.
const std::string& sandbox_unavailable();

// The directories of the shared libraries `binary` loads (from ldd) that lie outside the system directories
// the sandbox always binds: libtorch from a Python package, a CUDA toolkit under /opt, and so on.
std::vector<std::filesystem::path> library_dirs_outside_system(const std::filesystem::path& binary);

// Resource limits for a sandboxed job (setrlimit in the child, inherited by everything inside).
struct SandboxLimits {
  size_t address_space = 0;  // RLIMIT_AS per process; 0 = none (CUDA reserves terabytes of virtual space)
  size_t file_size = 0;      // RLIMIT_FSIZE: also caps the job's captured stdout/stderr (SIGXFSZ is ignored)
  double cpu_s = 0;          // RLIMIT_CPU per process
  size_t processes = 0;      // RLIMIT_NPROC (the kernel does not apply it to uid 0; the PID namespace still bounds)
};
void apply_limits(ProcessOptions& po, const SandboxLimits& limits);

}  // namespace pkb
