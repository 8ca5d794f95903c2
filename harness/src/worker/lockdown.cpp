#include "worker/lockdown.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "core/error.h"

namespace pkb::runner {
namespace {

// Landlock ABI 1's rights: everything it can restrict on a path. Files take only the first three.
constexpr uint64_t kAllDirRights = (1ULL << 13) - 1;
constexpr uint64_t kFileRights =
    LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE;

bool is_hidden_or_below(const std::string& path, const std::vector<std::string>& hidden) {
  for (const auto& h : hidden)
    if (path == h || path.rfind(h + "/", 0) == 0) return true;
  return false;
}

bool leads_to_hidden(const std::string& dir, const std::vector<std::string>& hidden) {
  for (const auto& h : hidden)
    if (h.rfind(dir + "/", 0) == 0) return true;
  return false;
}

void grant(int ruleset, const std::string& path) {
  int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return;  // a dangling link, an entry that vanished
  struct stat st {};
  fstat(fd, &st);
  landlock_path_beneath_attr rule{S_ISDIR(st.st_mode) ? kAllDirRights : kFileRights, fd};
  syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
  close(fd);
}

// Grants every right beneath each entry of `dir`, except the hidden paths; directories on the way to one are walked.
void grant_beside(int ruleset, const std::string& dir, const std::vector<std::string>& hidden) {
  DIR* d = opendir(dir.empty() ? "/" : dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    std::string path = dir + "/" + name;
    if (is_hidden_or_below(path, hidden)) continue;
    if (leads_to_hidden(path, hidden)) {
      grant_beside(ruleset, path, hidden);
      continue;
    }
    grant(ruleset, path);
  }
  closedir(d);
}

// A seccomp program, built a block at a time. Every block starts by loading the syscall number.
class Filter {
 public:
  explicit Filter(uint32_t arch) {
    load(offsetof(seccomp_data, arch));
    jump(BPF_JEQ, arch, 1, 0);
    ret(SECCOMP_RET_KILL_PROCESS);
  }
  void deny(long nr, int err) {
    load_nr();
    jump(BPF_JEQ, static_cast<uint32_t>(nr), 0, 1);
    ret(SECCOMP_RET_ERRNO | static_cast<uint32_t>(err));
  }
  // Allowed when the first argument's low 32 bits equal `value` (op BPF_JEQ) or share a bit with it (BPF_JSET).
  void allow_if_arg0(long nr, uint16_t op, uint32_t value, int err) {
    load_nr();
    jump(BPF_JEQ, static_cast<uint32_t>(nr), 0, 4);
    load(offsetof(seccomp_data, args));  // the low word on little-endian machines
    jump(op, value, 0, 1);
    ret(SECCOMP_RET_ALLOW);
    ret(SECCOMP_RET_ERRNO | static_cast<uint32_t>(err));
  }
  // Refused when argument `arg`'s low 32 bits equal `value`.
  void deny_if_arg(long nr, int arg, uint32_t value, int err) {
    load_nr();
    jump(BPF_JEQ, static_cast<uint32_t>(nr), 0, 3);
    load(arg_low(arg));
    jump(BPF_JEQ, value, 0, 1);
    ret(SECCOMP_RET_ERRNO | static_cast<uint32_t>(err));
  }
  // Refused when argument `arg` equals `value` and argument `flags_arg` has a bit of `mask`.
  void deny_if_arg_and_flag(long nr, int arg, uint32_t value, int flags_arg, uint32_t mask, int err) {
    load_nr();
    jump(BPF_JEQ, static_cast<uint32_t>(nr), 0, 5);
    load(arg_low(arg));
    jump(BPF_JEQ, value, 0, 3);
    load(arg_low(flags_arg));
    jump(BPF_JSET, mask, 0, 1);
    ret(SECCOMP_RET_ERRNO | static_cast<uint32_t>(err));
  }
  void deny_at_or_above(uint32_t nr, int err) {
    load_nr();
    jump(BPF_JGE, nr, 0, 1);
    ret(SECCOMP_RET_ERRNO | static_cast<uint32_t>(err));
  }
  void install() {
    ret(SECCOMP_RET_ALLOW);
    sock_fprog prog{static_cast<unsigned short>(code_.size()), code_.data()};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) throw Error(std::string("no_new_privs: ") + std::strerror(errno));
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0)
      throw Error(std::string("seccomp: ") + std::strerror(errno));
  }

 private:
  void load(uint32_t offset) { code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  void load_nr() { load(offsetof(seccomp_data, nr)); }
  static uint32_t arg_low(int i) { return offsetof(seccomp_data, args) + 8 * i; }  // little-endian machines
  void jump(uint16_t op, uint32_t k, uint8_t jt, uint8_t jf) {
    code_.push_back(BPF_JUMP(BPF_JMP | op | BPF_K, k, jt, jf));
  }
  void ret(uint32_t value) { code_.push_back(BPF_STMT(BPF_RET | BPF_K, value)); }
  std::vector<sock_filter> code_;
};

// Ways to have the kernel signal a process on the runner's behalf: an owner for an open file's I/O signals (SIGIO or
// F_SETSIG's choice to any pid or group, sent when data arrives), leases and dnotify, a terminal's process group.
// Landlock's signal scope (hide_paths) covers these where the kernel has it; this is the floor where it does not.
void deny_signal_routes(Filter& f) {
  for (uint32_t cmd : {F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETLEASE, F_NOTIFY}) f.deny_if_arg(SYS_fcntl, 1, cmd, EPERM);
  f.deny_if_arg_and_flag(SYS_fcntl, 1, F_SETFL, 2, O_ASYNC, EPERM);
  for (uint32_t request : {FIOSETOWN, SIOCSPGRP, FIOASYNC, TIOCSPGRP, TIOCSCTTY, TIOCSTI})
    f.deny_if_arg(SYS_ioctl, 1, request, EPERM);
}

// Watches on paths report activity in places Landlock hides (the seal's FIFOs, /tmp, other processes' /proc).
void deny_watches(Filter& f) {
#ifdef SYS_inotify_init
  f.deny(SYS_inotify_init, EPERM);
#endif
  for (long nr : {SYS_inotify_init1, SYS_inotify_add_watch, SYS_fanotify_init, SYS_fanotify_mark}) f.deny(nr, EPERM);
}

}  // namespace

std::string hide_paths(const std::vector<std::string>& hidden, const std::vector<std::string>& granted) {
  // Landlock's ruleset as of ABI 6 (Debian 12's headers know ABI 1): from ABI 6 the domain is also scoped, so that
  // nothing inside signals (by kill or by an I/O owner) or reaches the abstract sockets of a process outside it.
  struct {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
  } attr{kAllDirRights, 0, 0};
  constexpr uint64_t kScopeAbstractUnixSocket = 1, kScopeSignal = 2;
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  size_t attr_size = sizeof attr.handled_access_fs;
  if (abi >= 6) attr.scoped = kScopeAbstractUnixSocket | kScopeSignal, attr_size = sizeof attr;
  int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0));
  if (ruleset < 0) return std::string("Landlock unavailable: ") + std::strerror(errno);
  grant_beside(ruleset, "", hidden);
  for (const auto& g : granted) grant(ruleset, g);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
    std::string why = std::strerror(errno);
    close(ruleset);
    return "Landlock restrict_self: " + why;
  }
  close(ruleset);
  return "";
}

void restrict_syscalls() {
#if defined(__x86_64__)
  Filter f(AUDIT_ARCH_X86_64);
  f.deny_at_or_above(0x40000000, EPERM);  // the x32 ABI's numbers: a second way into every call below
#elif defined(__aarch64__)
  Filter f(AUDIT_ARCH_AARCH64);
#else
#error "pkb-runner's seccomp filter knows x86_64 and aarch64"
#endif
  for (long nr : {SYS_ptrace,
                  SYS_process_vm_readv,
                  SYS_process_vm_writev,
                  SYS_kcmp,
                  SYS_perf_event_open,
                  SYS_bpf,
                  SYS_pidfd_open,
                  SYS_pidfd_getfd,
                  SYS_pidfd_send_signal,
                  SYS_process_madvise,
                  SYS_io_uring_setup,
                  SYS_io_uring_enter,
                  SYS_io_uring_register,
                  SYS_io_setup,
                  SYS_io_submit,
                  SYS_execve,
                  SYS_execveat,
                  SYS_unshare,
                  SYS_setns,
                  SYS_mount,
                  SYS_umount2,
                  SYS_pivot_root,
                  SYS_chroot,
                  SYS_tkill,
                  SYS_move_pages,
                  SYS_migrate_pages})
    f.deny(nr, EPERM);
#ifdef SYS_fork
  f.deny(SYS_fork, EPERM);
  f.deny(SYS_vfork, EPERM);
#endif
  f.deny(SYS_clone3, ENOSYS);  // glibc then creates threads with clone, whose flags the filter can read
  f.allow_if_arg0(SYS_clone, BPF_JSET, CLONE_THREAD, EPERM);
  const auto self = static_cast<uint32_t>(getpid());
  for (long nr : {SYS_kill, SYS_tgkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo})
    f.allow_if_arg0(nr, BPF_JEQ, self, EPERM);
  f.allow_if_arg0(SYS_socket, BPF_JEQ, AF_UNIX, EPERM);
  deny_signal_routes(f);
  deny_watches(f);
  f.install();
}

}  // namespace pkb::runner
