// The sandbox that everything touching candidate code runs in (the compiler on untrusted source, and the candidate
// pass: mpirun with its W ranks, in one sandbox so CUDA IPC works between them). It is bubblewrap: its own user,
// PID, network (loopback only), IPC, UTS and cgroup namespaces; no capabilities; an empty environment apart from
// what the job names; stdin from /dev/null; the system directories read-only; writable only the job's working
// directory, a private /tmp and /dev/shm. Nothing else of the host is visible: not the reference cache, the run
// directory, other candidates, $HOME or the driver's environment. The PID namespace dies with its first process,
// so nothing a candidate starts outlives its job. The sandbox, not the lint, is the security boundary.
// Its own paths are fixed names under /pkb (the working directory, which is also HOME and PWD, is /pkb/work), so that
// no host path (the run directory, the cache, a user's home) is what a process inside sees as its directory, its
// environment or its arguments. Known limit: /proc/self/mountinfo shows each bound directory's path on the host (the
// mount's root), so what is bound under /pkb should come from a directory of neutral name (or be a private tmpfs).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launch/process.h"

namespace pkb {

// Fixed paths inside the sandbox.
inline const std::filesystem::path kSandboxWork = "/pkb/work";  // the working directory, HOME and PWD
inline const std::filesystem::path kSandboxBin = "/pkb/bin";    // the rank programs and pkb-runner

// A file bwrap writes into the sandbox from a copy of `contents`, so that no host path lies behind it (a bound file
// shows its host path in /proc/self/mountinfo): read-only (a library, a problem's spec), or else a file of the job's
// own, which it may delete (a plan in kSandboxWork).
struct SandboxFile {
  std::filesystem::path inside;
  std::string contents;
  bool read_only = true;
};

struct Sandbox {
  bool gpu = false;  // bind the NVIDIA device nodes and /sys
  // Bound read-only at the same path: what is part of the system wherever it lies (pkb's headers, the directories of
  // libraries a rank program was linked against by absolute path).
  std::vector<std::filesystem::path> read_only;
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> read_only_at;  // host path -> sandbox path
  std::filesystem::path work;              // host directory bound read-write at kSandboxWork; empty: a private tmpfs
  std::vector<SandboxFile> files;          // written in after the mounts above (run_sandboxed hands bwrap the data)
  std::map<std::string, std::string> env;  // the only variables inside besides PATH, HOME, PWD, TMPDIR, LANG
  size_t tmpfs_bytes = size_t{1} << 30;    // size of /tmp and of /dev/shm each (and of a private kSandboxWork)
  // GPUs shared by processes of the job (a monitor and its runner, ranks sharing a GPU): an MPS control daemon of the
  // sandbox's own, started inside before the job, rather than the host's pipe directory bound in. The candidate then
  // reaches no control pipe of the host's and no other evaluation's MPS server. A client that finds no daemon runs in a
  // context of its own, and two contexts take turns on the GPU in time slices (docs/design/gpu-sharing.md).
  bool own_mps = false;
};

// Where the sandbox's own MPS daemon keeps its pipes and logs (inside its private /tmp).
inline const std::filesystem::path kSandboxMpsPipes = "/tmp/pkb-mps/pipe";
inline const std::filesystem::path kSandboxMpsLogs = "/tmp/pkb-mps/log";

// bwrap's command line that runs `argv` inside `box`. Start it with run_sandboxed, which clears bwrap's own
// environment (readable from inside through /proc), opens the descriptor bwrap reports its namespace init on and hands
// it the contents of box.files.
std::vector<std::string> sandbox_command(const Sandbox& box, const std::vector<std::string>& argv);

// Runs `argv` inside `box` (sandbox_command) under `po`. The sandbox is its own session, out of reach of the
// process-group kills run_process uses; bwrap reports its PID-namespace init (--info-fd), which run_process
// kills with the group (and the termination handler kills too), so no sandbox outlives its job or pkb, even
// where bwrap's own parent-death signal does not fire.
ProcessResult run_sandboxed(const Sandbox& box, const std::vector<std::string>& argv, ProcessOptions po);

// Why no sandbox can run here ("" when one can): bwrap missing, or unable to create namespaces. Probed once.
const std::string& sandbox_unavailable();

// The paths of the shared libraries `binary` loads, as ldd resolves them (asked once per binary).
std::vector<std::filesystem::path> shared_libraries(const std::filesystem::path& binary);

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
