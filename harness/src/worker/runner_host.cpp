#include "worker/runner_host.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/error.h"

namespace pkb {

using namespace runner;

namespace {

// SIGCONTs this process received: job control (a Slurm suspend and resume) continues the runner too, so a continue
// of the runner's that comes with one of the monitor's own is not the candidate's doing.
std::atomic<unsigned> g_monitor_continues{0};

extern "C" void count_continue(int) { g_monitor_continues.fetch_add(1, std::memory_order_relaxed); }

void count_monitor_continues() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa = {};
    sa.sa_handler = count_continue;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGCONT, &sa, nullptr);
  });
}

}  // namespace

RunnerProcess::RunnerProcess(const std::filesystem::path& program, const protocol::RunnerLayout& layout,
                             const std::vector<int>& heap_fds, const std::filesystem::path& work_dir) {
  int control_fd = memfd_create("pkb-runner-control", MFD_CLOEXEC);
  if (control_fd < 0 || ftruncate(control_fd, kControlBytes) != 0)
    throw Error(std::string("the runner's control page: ") + std::strerror(errno));
  void* page = mmap(nullptr, kControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED, control_fd, 0);
  if (page == MAP_FAILED) throw Error(std::string("mmap of the runner's control page: ") + std::strerror(errno));
  control_ = static_cast<Control*>(page);
  const std::string text = nlohmann::json(layout).dump();
  if (kLayoutOffset + text.size() > kControlBytes) throw Error("the runner's layout does not fit its control page");
  std::memcpy(static_cast<char*>(page) + kLayoutOffset, text.data(), text.size());
  control_->layout_bytes = static_cast<uint32_t>(text.size());
  // Everything the child needs is made before fork: between fork and exec it makes system calls only.
  const std::string prog = program.string(), dir = work_dir.string();
  std::vector<std::string> env_text = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" + dir, "TMPDIR=" + dir};
  // Which GPUs, in which order, and the MPS daemon the ranks share: the runner's device ordinal is the monitor's.
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_MPS_PIPE_DIRECTORY",
                           "CUDA_MPS_LOG_DIRECTORY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"})
    if (const char* v = getenv(name)) env_text.push_back(std::string(name) + "=" + v);
  std::vector<char*> envp, argv = {const_cast<char*>(prog.c_str()), nullptr};
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t parent = getpid();
  const int world = static_cast<int>(heap_fds.size());
  pid_ = fork();
  if (pid_ < 0) throw Error(std::string("cannot start the runner: fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(3);
    // Move every source above the targets first, so that no dup2 overwrites a descriptor still to be moved.
    constexpr int kHigh = 1000;
    int moved_control = fcntl(control_fd, F_DUPFD, kHigh);
    std::vector<int> moved(world);
    for (int q = 0; q < world; ++q) moved[q] = fcntl(heap_fds[q], F_DUPFD, kHigh);
    dup2(moved_control, kControlFd);
    for (int q = 0; q < world; ++q) dup2(moved[q], kHeapFd + q);
    syscall(SYS_close_range, kHeapFd + world, ~0U, 0);
    if (chdir(dir.c_str()) != 0) _exit(3);
    execve(prog.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(control_fd);
  count_monitor_continues();
  loaded_ = wait_stopped(0);
}

RunnerProcess::~RunnerProcess() {
  if (pid_ > 0 && !gone_) {
    kill(pid_, SIGKILL);
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  if (control_) munmap(control_, kControlBytes);
}

std::filesystem::path runner_program() {
  return std::filesystem::read_symlink("/proc/self/exe").parent_path() / "pkb-runner";
}

std::unique_ptr<RunnerProcess> RunnerProcess::ping_only(const std::filesystem::path& program,
                                                        const std::filesystem::path& work_dir) {
  std::filesystem::create_directories(work_dir);
  auto r =
      std::make_unique<RunnerProcess>(program, protocol::RunnerLayout{.ping_only = true}, std::vector<int>{}, work_dir);
  if (!r->loaded().failure.empty()) throw Error("the doorbell runner did not start: " + r->loaded().failure);
  return r;
}

double RunnerProcess::doorbell_us(int n) {
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!call(kPing, 0).failure.empty()) return 0;
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(us.begin(), us.begin() + n / 2, us.end());
  return us[n / 2];
}

std::string RunnerProcess::lockdown_note() const {
  return std::string(control_->lockdown_note, strnlen(control_->lockdown_note, sizeof control_->lockdown_note));
}

std::string RunnerProcess::ran_between_calls() {
  int st = 0;
  pid_t r;
  while ((r = waitpid(pid_, &st, WNOHANG | WUNTRACED | WCONTINUED)) < 0 && errno == EINTR) {
  }
  if (r != pid_) return "";  // no change of state since the monitor saw it stop
  if (WIFEXITED(st) || WIFSIGNALED(st)) {
    gone_ = true;
    return WIFSIGNALED(st)
               ? "the candidate's process was killed by signal " + std::to_string(WTERMSIG(st)) + " between calls"
               : "the candidate's process exited between calls";
  }
  if (g_monitor_continues.load() != continues_at_stop_) return "";  // job control resumed both: not the candidate
  return "the candidate's process ran between calls: it was resumed while frozen by a continue the monitor did not "
         "send (a timer or signal of its own), so work could run off the clock";
}

RunnerProcess::Outcome RunnerProcess::call(Op op, int slot) {
  if (gone_) return Outcome{.failure = "the candidate's process is gone"};
  // Every continue or stop since the last call's stop is reported here (waitpid keeps the latest change of state
  // until it is reaped, and only this monitor reaps it): a runner that resumed itself cannot hide it by stopping again.
  if (std::string why = ran_between_calls(); !why.empty()) return Outcome{.failure = why};
  control_->op = op;
  control_->slot = slot;
  return wake(1);
}

RunnerProcess::Outcome RunnerProcess::call_block(const std::vector<int>& slots) {
  if (slots.empty() || slots.size() > static_cast<size_t>(kMaxBlockCalls))
    throw Error("a block of " + std::to_string(slots.size()) + " calls (1 to " + std::to_string(kMaxBlockCalls) + ")");
  if (gone_) return Outcome{.failure = "the candidate's process is gone"};
  if (std::string why = ran_between_calls(); !why.empty()) return Outcome{.failure = why};
  control_->op = kRunBlock;
  control_->slot = slots[0];
  control_->count = static_cast<int32_t>(slots.size());
  std::copy(slots.begin(), slots.end(), control_->block_slots);
  return wake(static_cast<uint32_t>(slots.size()));
}

RunnerProcess::Outcome RunnerProcess::wake(uint32_t calls) {
  control_->rc = 0;
  control_->error[0] = 0;
  seq_ += calls;
  control_->seq.store(seq_);
  kill(pid_, SIGCONT);
  return wait_stopped(seq_);
}

// No deadline of its own: a runner that never stops again (a hang in the candidate's code) is ended with its whole
// rank group by the rank job's deadline (launch/jobs.h), which the evaluation records as a timeout.
RunnerProcess::Outcome RunnerProcess::wait_stopped(uint32_t seq) {
  Outcome o;
  int st = 0;
  for (;;) {
    pid_t r = waitpid(pid_, &st, WUNTRACED);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      gone_ = true;
      o.failure = std::string("waitpid on the candidate's process: ") + std::strerror(errno);
      return o;
    }
    if (WIFSTOPPED(st)) break;
    if (WIFEXITED(st) || WIFSIGNALED(st)) {
      gone_ = true;
      if (WIFSIGNALED(st)) {
        o.killed_by_signal = true;
        o.signal = WTERMSIG(st);
        o.failure = "killed by signal " + std::to_string(o.signal) + " (" + strsignal(o.signal) + ")";
      } else {
        o.failure = "the candidate's process exited (status " + std::to_string(WEXITSTATUS(st)) + ") inside a call";
      }
      return o;
    }
  }
  continues_at_stop_ = g_monitor_continues.load();
  // Frozen: nothing of the candidate's runs while these are read.
  o.rc = control_->rc;
  o.error.assign(control_->error, strnlen(control_->error, sizeof control_->error));
  if (control_->done.load() != seq) o.failure = "the candidate's process stopped itself before finishing the call";
  return o;
}

}  // namespace pkb
