// Runs a child command (mpirun, torchrun, nvcc) with a wall-clock deadline. The child leads its own process
// group, so on expiry the whole tree (mpirun and every rank) is killed: SIGTERM, then SIGKILL after a grace
// period. pkb never waits on a child without a deadline.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace pkb {

struct ProcessOptions {
  double timeout_s = 60;
  double kill_grace_s = 2;
  std::filesystem::path stdout_path, stderr_path;      // empty: discarded
  std::map<std::string, std::string> env;              // added to (and overriding) the inherited environment
  bool clear_env = false;                              // start from an empty environment instead of the inherited one
  std::filesystem::path cwd;                           // empty: inherited
  std::vector<std::pair<int, unsigned long>> rlimits;  // setrlimit(resource, value) in the child before exec
  // >= 0: the child gets a pipe's write end as this descriptor, where it reports `"child-pid": N` as bwrap's
  // --info-fd does. Process N (the sandbox's PID-namespace init, in a session of its own that no group kill
  // reaches) is then killed with the group: on the deadline, at the end, and by the termination handler. Killing
  // a namespace's init kills everything in the namespace.
  int info_fd = -1;
  // Called from the waiting loop about every `poll_interval_s` while the child runs; false ends it now: the whole
  // group is killed as on the deadline, without the grace (pkb serve's cancel, and its progress reports).
  std::function<bool()> poll;
  double poll_interval_s = 0.1;
  // {descriptor here, its number in the child}: open in the child (bwrap's --file and --ro-bind-data read them).
  std::vector<std::pair<int, int>> pass_fds;
};

struct ProcessResult {
  int exit_code = -1;  // valid when exited
  int signal = 0;      // terminating signal, if any
  bool exited = false;
  bool timed_out = false;
  bool cancelled = false;  // ProcessOptions::poll returned false
  double wall_s = 0;
  std::string stdout_tail, stderr_tail;  // last few KiB, for records and error messages

  bool ok() const { return exited && exit_code == 0 && !timed_out && !cancelled; }
  std::string summary() const;  // "exit 0", "killed by SIGSEGV", "timed out after 30 s"
};

// Throws pkb::Error only if the child cannot be started at all.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts);

// Several children in one process group that the first leads (the W ranks of a Python job), under the first
// options' deadline; on expiry the whole group is killed as above. When one child fails, the others get
// `peer_grace_s` to finish before the group is killed: peers blocked in a collective with a dead rank would
// otherwise wait for the deadline. One result per child, in order.
std::vector<ProcessResult> run_process_group(const std::vector<std::vector<std::string>>& argvs,
                                             const std::vector<ProcessOptions>& opts, double peer_grace_s = 2);

// Makes SIGINT, SIGTERM and SIGHUP kill every child process group still running, and every reported namespace
// init (ProcessOptions::info_fd), before this process dies of the signal: children lead their own groups, so a
// Ctrl-C, a `kill` or a Slurm cancel aimed at pkb would otherwise leave mpirun and its ranks (a spinning
// candidate, say) running. Children also get SIGKILL if pkb itself is SIGKILLed. A signal that comes while a
// child is starting and has not yet reported its namespace init takes effect once it has (at most 2 s later).
void kill_children_on_termination();

// Runs a command that daemonizes (forks a server and exits, like `nvidia-cuda-mps-control -d`), so that what it leaves
// behind outlives it: run_process's keeper kills whatever a command leaves, so this one runs without a keeper, in a
// session of its own, and its daemon is the caller's to stop. Honours timeout_s, env, clear_env, stdout_path and
// stderr_path only; the result is the command's own.
ProcessResult start_daemon_process(const std::vector<std::string>& argv, const ProcessOptions& opts);

// Runs a short command and returns its standard output ("" if it failed or printed nothing).
std::string capture_stdout(const std::vector<std::string>& argv, double timeout_s = 30);

// Last `max_bytes` of a file (whole lines where possible); "" if missing.
std::string file_tail(const std::filesystem::path& p, size_t max_bytes = 4096);

}  // namespace pkb
