#include "launch/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <thread>

#include "core/error.h"

extern char** environ;

namespace pkb {
namespace {

// A descriptor that names process `pid` for as long as it is open (no reuse of the number can fool a signal or a
// wait through it); -1 where the kernel has no pidfd_open (before 5.3) or the process is gone.
int open_pidfd(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Live children's process groups, for the termination handler (lock-free: it runs in a signal handler).
constexpr int kMaxChildren = 256;
std::atomic<pid_t> g_children[kMaxChildren];

void track_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}

void untrack_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

// pidfds of reported namespace inits (ProcessOptions::info_fd), stored + 1 so that 0 is an empty slot. A pidfd
// names the process itself: signalling it can never hit a later process that reuses the pid.
std::atomic<int> g_namespace_inits[kMaxChildren];

void track_namespace_init(int pidfd) {
  for (auto& slot : g_namespace_inits) {
    int empty = 0;
    if (slot.compare_exchange_strong(empty, pidfd + 1)) return;
  }
}

void untrack_namespace_init(int pidfd) {
  for (auto& slot : g_namespace_inits) {
    int mine = pidfd + 1;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

void kill_namespace_init(int pidfd) {
  if (pidfd >= 0) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
}

void kill_children_and_die(int sig) {
  for (auto& slot : g_namespace_inits)
    if (int fd = slot.load()) kill_namespace_init(fd - 1);
  for (auto& slot : g_children)
    if (pid_t pid = slot.load()) kill(-pid, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

// Children being started that will report a namespace init, and a termination signal that came meanwhile. bwrap's
// init leads a session of its own and gets --die-with-parent's death signal only some time after bwrap clones it:
// pkb dying between that clone and reading the report would kill bwrap and leave the init, and the whole sandbox,
// running (seen under load in a Slurm requeue). So the handler leaves the death to the last such start to finish,
// once every init is tracked. Dekker-style: the handler stores the signal then reads the count; a start raises the
// count then reads the signal; sequentially consistent atomics make at least one of them see the other.
std::atomic<int> g_reporting_starts{0};
std::atomic<int> g_pending_termination{0};

extern "C" void on_termination(int sig) {
  g_pending_termination.store(sig);
  if (g_reporting_starts.load() == 0) kill_children_and_die(sig);
}

// Held by spawn() from before the fork until the reported init is tracked (or known not to exist).
class ReportingStart {
 public:
  ReportingStart() {
    g_reporting_starts.fetch_add(1);
    die_if_terminated();  // a signal that came before: start nothing
  }
  ~ReportingStart() {
    if (g_reporting_starts.fetch_sub(1) == 1) die_if_terminated();
  }
  ReportingStart(const ReportingStart&) = delete;
  ReportingStart& operator=(const ReportingStart&) = delete;

 private:
  static void die_if_terminated() {
    if (int sig = g_pending_termination.load()) kill_children_and_die(sig);
  }
};

int open_sink(const std::filesystem::path& p) {
  if (p.empty()) return ::open("/dev/null", O_WRONLY);
  return ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

}  // namespace

std::string ProcessResult::summary() const {
  if (cancelled) return "cancelled";
  if (timed_out) return "timed out after " + std::to_string(static_cast<int>(wall_s + 0.5)) + " s";
  if (signal) return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit " + std::to_string(exit_code);
}

std::string file_tail(const std::filesystem::path& p, size_t max_bytes) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  auto size = static_cast<size_t>(in.tellg());
  size_t start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(start);
  std::string s(size - start, '\0');
  in.read(s.data(), s.size());
  if (start > 0) {
    auto nl = s.find('\n');
    if (nl != std::string::npos && nl + 1 < s.size()) s = s.substr(nl + 1);
  }
  return s;
}

namespace {

// ---- The keeper: nothing a child starts outlives pkb ----
//
// Every command runs under a keeper: a forked copy of pkb (no exec) that is a child subreaper and the command's
// parent. Whatever the command leaves when it dies (a sandbox's namespace init, the ranks of a killed mpirun) is
// re-parented to the keeper, which kills and reaps it; when pkb dies, even by SIGKILL, the keeper is told by its
// parent-death signal and kills the command and everything under it. The keeper then ends as the command ended, so
// pkb waits on it as it would on the command. Between fork and exec only system calls run: pkb has threads.

constexpr int kParentDied = SIGUSR2;  // the keeper's parent-death signal (pkb sends it to no one)

struct LinuxDirent64 {  // what getdents64 returns (glibc's struct dirent64 is not promised to match)
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// Kills every child of this process (a /proc scan by parent pid: raw system calls, no allocation) and reaps them and
// whatever they leave, until there are no children at all.
void kill_all_children() {
  const pid_t self = getpid();
  for (;;) {
    int dir = static_cast<int>(syscall(SYS_open, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    char entries[4096];
    for (long got; dir >= 0 && (got = syscall(SYS_getdents64, dir, entries, sizeof entries)) > 0;) {
      for (long at = 0; at < got; at += reinterpret_cast<const LinuxDirent64*>(entries + at)->reclen) {
        const auto* e = reinterpret_cast<const LinuxDirent64*>(entries + at);
        long pid = 0;
        for (const char* c = e->name; *c; ++c) pid = (*c >= '0' && *c <= '9') ? pid * 10 + (*c - '0') : -1;
        if (pid <= 0 || pid == self) continue;
        char path[64] = "/proc/", stat[512];
        size_t len = 6;
        for (const char* c = e->name; *c && len < 40;) path[len++] = *c++;
        for (const char* c = "/stat"; *c;) path[len++] = *c++;
        path[len] = 0;
        int fd = static_cast<int>(syscall(SYS_open, path, O_RDONLY | O_CLOEXEC));
        if (fd < 0) continue;
        long n = read(fd, stat, sizeof stat - 1);
        close(fd);
        if (n <= 0) continue;
        stat[n] = 0;
        const char* paren = strrchr(stat, ')');  // "pid (comm) state ppid ...": comm may hold anything
        if (!paren) continue;
        long ppid = 0;
        const char* c = paren + 4;  // ") S "
        while (*c >= '0' && *c <= '9') ppid = ppid * 10 + (*c++ - '0');
        if (ppid == self) kill(static_cast<pid_t>(pid), SIGKILL);
      }
    }
    if (dir >= 0) close(dir);
    pid_t r;
    while ((r = waitpid(-1, nullptr, WNOHANG | __WALL)) > 0) {
    }
    if (r < 0 && errno == ECHILD) return;
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, nullptr);
  }
}

// Ends this process as `status` says the command ended.
[[noreturn]] void end_as(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    sigprocmask(SIG_UNBLOCK, &only, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

// In the forked child: returns 0 in the command's process (a new child of this one); this process stays the keeper
// and never returns. Nonzero: the keeper could not be set up (pkb already gone).
int become_keeper(pid_t parent, sigset_t* caller_mask) {
  sigset_t kept;
  sigemptyset(&kept);
  for (int sig : {SIGCHLD, kParentDied, SIGTERM, SIGINT, SIGHUP}) sigaddset(&kept, sig);
  sigprocmask(SIG_BLOCK, &kept, caller_mask);
  signal(SIGCHLD, SIG_DFL);  // reported, never reaped for us
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  prctl(PR_SET_PDEATHSIG, kParentDied);
  // A parent that died before the prctl (killed while forking: too early to have tracked this child, too late to
  // signal it) leaves an orphan that would go on to start a sandbox nobody waits for.
  if (getppid() != parent) return 1;
  const pid_t command = fork();
  if (command == 0) return 0;
  syscall(SYS_close_range, 3, ~0U, 0);  // hold none of pkb's descriptors: pipes must see their EOF
  if (command < 0) _exit(127);
  for (;;) {
    siginfo_t info;
    const int sig = sigwaitinfo(&kept, &info);
    if (sig == kParentDied) {
      kill_all_children();
      _exit(137);
    }
    if (sig != SIGCHLD) continue;  // SIGTERM and the like reach the command's group directly
    int status = 0;
    for (pid_t r; (r = waitpid(-1, &status, WNOHANG | __WALL)) > 0;) {
      if (r != command) continue;
      kill_all_children();  // what the command left behind
      end_as(status);
    }
  }
}

// The pidfd of the process a child reports on its info pipe (`"child-pid": N`, bwrap's --info-fd JSON), or -1.
// bwrap writes it once the namespaces exist, before the command starts; EOF (bwrap failed) or 10 s end the wait.
// A termination that comes meanwhile (deferred, see ReportingStart) cuts the wait to 2 s from then.
int open_reported_init(int fd) {
  std::string text;
  double give_up = now_s() + 10;
  bool cut = false;
  while (text.find('}') == std::string::npos && text.size() < 4096) {
    if (!cut && g_pending_termination.load()) cut = true, give_up = std::min(give_up, now_s() + 2);
    pollfd p = {fd, POLLIN, 0};
    int wait_ms = std::min(100, static_cast<int>((give_up - now_s()) * 1000));  // slices: see a termination soon
    if (wait_ms <= 0) break;
    int ready = poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;  // the deferred handler returned into this poll
    if (ready < 0) break;
    if (ready == 0) continue;
    char buf[512];
    ssize_t got = read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buf, static_cast<size_t>(got));
  }
  size_t key = text.find("\"child-pid\"");
  if (key == std::string::npos) return -1;
  size_t digits = text.find_first_of("0123456789", key);
  if (digits == std::string::npos) return -1;
  long pid = std::strtol(text.c_str() + digits, nullptr, 10);
  return pid > 0 ? open_pidfd(static_cast<pid_t>(pid)) : -1;
}

constexpr size_t kMaxPassedFds = 16;  // ProcessOptions::pass_fds

// Descriptors handed to a child (ProcessOptions::pass_fds), between fork and exec (system calls only: no allocation in
// a forked copy of a threaded process): lifted above every target at once (close-on-exec), so that setting up stdio
// and the info descriptor cannot overwrite one, then placed.
class PassedFds {
 public:
  explicit PassedFds(const std::vector<std::pair<int, int>>& fds) : fds_(fds) {
    for (size_t i = 0; i < fds_.size(); ++i) lifted_[i] = fcntl(fds_[i].first, F_DUPFD_CLOEXEC, 1000);
  }
  void place() const {
    for (size_t i = 0; i < fds_.size(); ++i) dup2(lifted_[i], fds_[i].second);
  }

 private:
  const std::vector<std::pair<int, int>>& fds_;
  int lifted_[kMaxPassedFds] = {};
};

// The environment a child gets: the caller's (none with opts.clear_env), opts.env over it.
std::vector<std::string> child_environment(const ProcessOptions& opts) {
  std::vector<std::string> env_strings;
  for (char** e = environ; !opts.clear_env && *e; ++e) {
    std::string kv = *e;
    if (!opts.env.count(kv.substr(0, kv.find('=')))) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : opts.env) env_strings.push_back(k + "=" + v);
  return env_strings;
}

// Where a forked child's output and reports go: its stdout and stderr, the write ends of the info pipe (-1: none)
// and of the pipe that carries a failed exec's errno.
struct ChildFds {
  int out = -1, err = -1, info = -1, exec_error = -1;
};

// The forked child: it becomes the keeper (launch/process.h), whose only child execs the command. Only
// async-signal-safe calls after the fork (the caller may have other threads).
[[noreturn]] void become_command(char* const* args, char* const* envp, const ProcessOptions& opts, pid_t group,
                                 pid_t parent, const ChildFds& fds) {
  setpgid(0, group);
  const pid_t keeper = getpid();
  sigset_t caller_mask;
  if (become_keeper(parent, &caller_mask) != 0) _exit(127);
  // The command's own process, the keeper's only child. It dies with the keeper.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != keeper) _exit(127);
  sigprocmask(SIG_SETMASK, &caller_mask, nullptr);
  PassedFds passed(opts.pass_fds);
  // No child reads the caller's terminal or pipe: a candidate must not see what pkb's caller types.
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) dup2(null_fd, 0);
  dup2(fds.out, 1);
  dup2(fds.err, 2);
  if (fds.info >= 0) {  // dup2 clears close-on-exec; a descriptor already in place needs it cleared by hand
    if (fds.info == opts.info_fd)
      fcntl(fds.info, F_SETFD, 0);
    else
      dup2(fds.info, opts.info_fd);
  }
  passed.place();
  for (const auto& [resource, value] : opts.rlimits) {
    struct rlimit lim = {value, value};
    setrlimit(resource, &lim);
    // Past the file-size limit writes fail with EFBIG instead of killing the writer: capped logs stay whole.
    if (resource == RLIMIT_FSIZE) signal(SIGXFSZ, SIG_IGN);
  }
  if (!opts.cwd.empty() && chdir(opts.cwd.c_str()) != 0) _exit(126);
  execvpe(args[0], const_cast<char* const*>(args), const_cast<char* const*>(envp));
  const int exec_errno = errno;
  dprintf(2, "cannot execute %s: %s\n", args[0], strerror(exec_errno));
  (void)!write(fds.exec_error, &exec_errno, sizeof exec_errno);
  _exit(127);
}

// Forks and execs one child into process group `group` (0: a new group it leads, tracked for the termination
// handler at once); a process it reports on opts.info_fd is opened into *namespace_init (-1 if none) and tracked.
pid_t spawn(const std::vector<std::string>& argv, const ProcessOptions& opts, pid_t group, int* namespace_init) {
  if (argv.empty()) throw Error("run_process: empty command");
  if (opts.pass_fds.size() > kMaxPassedFds) throw Error("run_process: too many descriptors to pass");
  std::optional<ReportingStart> reporting;
  if (opts.info_fd >= 0) reporting.emplace();
  std::vector<std::string> env_strings = child_environment(opts), argv_copy = argv;
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  int out_fd = open_sink(opts.stdout_path), err_fd = open_sink(opts.stderr_path);
  if (out_fd < 0 || err_fd < 0) throw Error("run_process: cannot open output files for " + argv[0]);
  int info[2] = {-1, -1};
  if (opts.info_fd >= 0 && pipe2(info, O_CLOEXEC) != 0) throw Error("run_process: pipe failed");
  // The child reports a failed exec here (the pipe closes unread on a successful one): a program that cannot be
  // started is the caller's error, never a result of the program's (a compile_error cached for a missing bwrap).
  int exec_errors[2] = {-1, -1};
  if (pipe2(exec_errors, O_CLOEXEC) != 0) throw Error("run_process: pipe failed");
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw Error(std::string("run_process: fork failed: ") + strerror(errno));
  if (pid == 0)
    become_command(args.data(), envp.data(), opts, group, parent, {out_fd, err_fd, info[1], exec_errors[1]});
  close(exec_errors[1]);
  setpgid(pid, group ? group : pid);  // also from the parent, so the group exists before we might signal it
  // Tracked before waiting for the child's report: bwrap takes tens of ms to build the namespaces, and a SIGTERM
  // then (a Slurm requeue) must still kill the group, else bwrap's own forks outlive this process.
  if (group == 0) track_child(pid);
  close(out_fd);
  close(err_fd);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(exec_errors[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close(exec_errors[0]);
  if (got == sizeof exec_errno) {
    if (info[0] >= 0) close(info[0]), close(info[1]);
    kill(pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    if (group == 0) untrack_child(pid);
    throw Error("cannot execute " + argv[0] + ": " + strerror(exec_errno));
  }
  if (info[1] >= 0) {
    close(info[1]);
    *namespace_init = open_reported_init(info[0]);
    close(info[0]);
    if (*namespace_init >= 0) track_namespace_init(*namespace_init);
  }
  return pid;
}

void fill_result(ProcessResult& r, int status, const ProcessOptions& opts) {
  if (WIFEXITED(status)) {
    r.exited = true;
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
  }
  if (!opts.stdout_path.empty()) r.stdout_tail = file_tail(opts.stdout_path);
  if (!opts.stderr_path.empty()) r.stderr_tail = file_tail(opts.stderr_path);
}

// Sleeps up to `us`, waking as soon as one of `pidfds` (-1: none) becomes readable (its process exited): a child's end
// is seen at once, not at the next of the backing-off polls. Without pidfds (before Linux 5.3) a plain sleep.
void sleep_until_exit(const std::vector<int>& pidfds, const std::vector<bool>& done, int us) {
  std::vector<pollfd> watch;
  for (size_t i = 0; i < pidfds.size(); ++i)
    if (!done[i] && pidfds[i] >= 0) watch.push_back({pidfds[i], POLLIN, 0});
  if (watch.empty()) {
    std::this_thread::sleep_for(std::chrono::microseconds(us));
    return;
  }
  const timespec timeout = {us / 1000000, (us % 1000000) * 1000L};
  ppoll(watch.data(), watch.size(), &timeout, nullptr);  // EINTR (a handled signal) just ends the sleep early
}

// Starts every command in one process group (the first's); on a failure to start one, kills those started and
// throws.
void spawn_group(const std::vector<std::vector<std::string>>& argvs, const std::vector<ProcessOptions>& opts,
                 std::vector<pid_t>& pids, std::vector<int>& inits) {
  try {
    for (size_t i = 0; i < argvs.size(); ++i) {
      int init = -1;
      pids.push_back(spawn(argvs[i], opts[i], pids.empty() ? 0 : pids.front(), &init));
      if (init >= 0) inits.push_back(init);
    }
  } catch (...) {
    if (!pids.empty()) {
      for (int fd : inits) kill_namespace_init(fd);
      kill(-pids.front(), SIGKILL);
      for (pid_t p : pids) waitpid(p, nullptr, 0);
      untrack_child(pids.front());
    }
    for (int fd : inits) untrack_namespace_init(fd), close(fd);
    throw;
  }
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& opts) {
  return run_process_group({argv}, {opts}).front();
}

std::vector<ProcessResult> run_process_group(const std::vector<std::vector<std::string>>& argvs,
                                             const std::vector<ProcessOptions>& opts, double peer_grace_s) {
  if (argvs.empty() || argvs.size() != opts.size()) throw Error("run_process_group: one ProcessOptions per command");
  const ProcessOptions& first = opts.front();
  double start = now_s();
  std::vector<pid_t> pids;
  std::vector<int> inits;  // pidfds of the namespace inits the children reported
  spawn_group(argvs, opts, pids, inits);
  auto kill_inits = [&] {
    for (int fd : inits) kill_namespace_init(fd);
  };
  auto release_inits = [&] {
    for (int fd : inits) untrack_namespace_init(fd), close(fd);
  };
  const pid_t group = pids.front();
  std::vector<int> pidfds;
  for (pid_t p : pids) pidfds.push_back(open_pidfd(p));

  std::vector<ProcessResult> results(pids.size());
  std::vector<int> statuses(pids.size(), 0);
  std::vector<bool> done(pids.size(), false);
  size_t running = pids.size();
  bool timed_out = false, cancelled = false;
  double deadline = start + first.timeout_s, kill_at = 0, next_poll = start + first.poll_interval_s;
  for (int sleep_us = 200; running > 0; sleep_us = std::min(sleep_us * 2, 20000)) {
    bool progressed = false;
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i] || waitpid(pids[i], &statuses[i], WNOHANG) != pids[i]) continue;
      done[i] = true, --running, progressed = true;
      results[i].wall_s = now_s() - start;
      bool failed = !WIFEXITED(statuses[i]) || WEXITSTATUS(statuses[i]) != 0;
      if (failed && running > 0 && kill_at == 0) kill_at = now_s() + peer_grace_s;  // peers may wait on it forever
    }
    if (progressed) sleep_us = 200;
    double t = now_s();
    if (first.poll && !cancelled && t >= next_poll) {
      next_poll = t + first.poll_interval_s;
      if (!first.poll()) {
        cancelled = true;
        kill_inits();
        kill(-group, SIGKILL);
      }
    }
    if (!timed_out && t >= deadline) {
      timed_out = true;
      kill(-group, SIGTERM);
      kill_at = t + first.kill_grace_s;
    } else if (kill_at > 0 && t >= kill_at) {
      kill_inits();
      kill(-group, SIGKILL);
      kill_at = 0;
    }
    if (running > 0) sleep_until_exit(pidfds, done, sleep_us);
  }
  for (int fd : pidfds)
    if (fd >= 0) close(fd);
  // Reap stragglers the children left behind (ranks of a crashed mpirun, a sandbox whose bwrap was killed).
  kill_inits();
  kill(-group, SIGKILL);
  untrack_child(group);
  release_inits();
  for (size_t i = 0; i < pids.size(); ++i) {
    results[i].timed_out = timed_out;
    results[i].cancelled = cancelled;
    if (timed_out) results[i].wall_s = now_s() - start;
    fill_result(results[i], statuses[i], opts[i]);
  }
  return results;
}

void kill_children_on_termination() {
  struct sigaction sa = {};
  sa.sa_handler = on_termination;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

}  // namespace pkb

namespace pkb {

ProcessResult start_daemon_process(const std::vector<std::string>& argv, const ProcessOptions& opts) {
  if (argv.empty()) throw Error("start_daemon_process: no command");
  std::vector<std::string> env_strings = child_environment(opts);
  std::vector<char*> args, env;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  for (auto& e : env_strings) env.push_back(e.data());
  args.push_back(nullptr), env.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  const std::string out = opts.stdout_path.empty() ? "/dev/null" : opts.stdout_path.string();
  const std::string err = opts.stderr_path.empty() ? "/dev/null" : opts.stderr_path.string();
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);  // out of reach of the caller's terminal and group signals
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw Error("cannot start " + argv[0] + ": " + std::strerror(rc));
  ProcessResult r;
  const double start = now_s();
  int status = 0;
  for (;;) {
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid) break;
    if (got < 0 && errno != EINTR) break;
    if (now_s() - start > opts.timeout_s) {  // the command itself hangs: it, not its daemon, is killed
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    usleep(2000);
  }
  r.wall_s = now_s() - start;
  fill_result(r, status, opts);
  return r;
}

std::string capture_stdout(const std::vector<std::string>& argv, double timeout_s) {
  static std::atomic<int> counter{0};  // pkb run calls this from several threads
  std::filesystem::path out = std::filesystem::temp_directory_path() /
                              ("pkb-capture-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  ProcessOptions po;
  po.timeout_s = timeout_s;
  po.stdout_path = out;
  ProcessResult r = run_process(argv, po);
  std::string text = r.ok() ? file_tail(out, 1 << 16) : "";
  std::filesystem::remove(out);
  return text;
}

}  // namespace pkb
