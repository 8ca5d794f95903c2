// The runner's lockdown (worker/lockdown.h), applied in a child process whose every check reports back through its
// exit status: what it refuses, and that what a candidate legitimately needs (threads, its own signals, its own
// files and /proc entries, Unix sockets) still works.
#include "worker/lockdown.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sockios.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;

// Runs `checks` in a forked child; each returns "" or what went wrong, which the test reports.
std::string in_child(const std::function<std::string()>& checks) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    std::string why;
    try {
      why = checks();
    } catch (const std::exception& e) {
      why = std::string("threw: ") + e.what();
    }
    (void)!write(pipe_fds[1], why.data(), why.size());
    _exit(0);
  }
  close(pipe_fds[1]);
  std::string got;
  char buf[512];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "the child died of signal " + std::to_string(WTERMSIG(status)) + " " + got;
  return got;
}

std::string expect_errno(const char* what, long rc, int err) {
  if (rc != -1) return std::string(what) + " succeeded; ";
  if (errno != err) return std::string(what) + ": errno " + std::to_string(errno) + "; ";
  return "";
}

TEST(Lockdown, TheSyscallFilterRefusesOtherProcessesAndKeepsThreads) {
  std::string why = in_child([] {
    const pid_t parent = getppid();
    pkb::runner::restrict_syscalls();
    std::string w;
    w += expect_errno("fork", fork(), EPERM);
    w += expect_errno("ptrace attach", ptrace(PTRACE_ATTACH, parent, nullptr, nullptr), EPERM);
    char byte = 0;
    iovec local{&byte, 1}, remote{&byte, 1};
    w += expect_errno("process_vm_readv", process_vm_readv(parent, &local, 1, &remote, 1, 0), EPERM);
    w += expect_errno("kill of the parent", kill(parent, 0), EPERM);
    w += expect_errno("kill of the process group", kill(0, 0), EPERM);
    w += expect_errno("an IPv4 socket", socket(AF_INET, SOCK_STREAM, 0), EPERM);
    w += expect_errno("io_uring_setup", syscall(SYS_io_uring_setup, 1, nullptr), EPERM);
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    w += expect_errno("execve", execve("/bin/true", argv, environ), EPERM);
    if (kill(getpid(), 0) != 0) w += "a signal to itself was refused; ";
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) w += "a Unix socket was refused; ";
    close(fd);
    int ran = 0;
    std::thread([&] { ran = 1; }).join();
    if (!ran) w += "no thread ran; ";
    return w;
  });
  EXPECT_EQ(why, "");
}

// Routes by which the kernel signals another process for the runner (an I/O owner, leases, dnotify, a terminal's
// group) and watches that would report activity on hidden paths: all refused; plain fcntl and ioctl calls still work.
TEST(Lockdown, NoSignalByProxyAndNoWatches) {
  std::string why = in_child([] {
    const pid_t parent = getppid();
    int fds[2];
    if (pipe(fds) != 0) return std::string("pipe failed");
    pkb::runner::restrict_syscalls();
    std::string w;
    w += expect_errno("F_SETOWN to the parent", fcntl(fds[0], F_SETOWN, parent), EPERM);
    f_owner_ex owner{F_OWNER_PID, parent};
    w += expect_errno("F_SETOWN_EX", fcntl(fds[0], F_SETOWN_EX, &owner), EPERM);
    w += expect_errno("F_SETSIG", fcntl(fds[0], F_SETSIG, SIGCONT), EPERM);
    w += expect_errno("F_SETFL with O_ASYNC", fcntl(fds[0], F_SETFL, O_ASYNC | O_NONBLOCK), EPERM);
    w += expect_errno("F_SETLEASE", fcntl(fds[0], F_SETLEASE, F_RDLCK), EPERM);
    w += expect_errno("F_NOTIFY", fcntl(fds[0], F_NOTIFY, DN_MODIFY), EPERM);
    int pid_arg = parent, on = 1;
    w += expect_errno("FIOSETOWN", ioctl(fds[0], FIOSETOWN, &pid_arg), EPERM);
    w += expect_errno("SIOCSPGRP", ioctl(fds[0], SIOCSPGRP, &pid_arg), EPERM);
    w += expect_errno("FIOASYNC", ioctl(fds[0], FIOASYNC, &on), EPERM);
    w += expect_errno("TIOCSPGRP", ioctl(fds[0], TIOCSPGRP, &pid_arg), EPERM);
    w += expect_errno("inotify_init1", inotify_init1(0), EPERM);
    w += expect_errno("fanotify_init", syscall(SYS_fanotify_init, 0, 0), EPERM);
    w += expect_errno("inotify_add_watch", syscall(SYS_inotify_add_watch, 0, "/tmp", IN_ALL_EVENTS), EPERM);
    if (fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) w += "F_SETFL without O_ASYNC was refused; ";
    if (fcntl(fds[0], F_GETOWN) < 0) w += "F_GETOWN was refused; ";
    int pending = 0;
    if (ioctl(fds[0], FIONREAD, &pending) != 0) w += "FIONREAD was refused; ";
    return w;
  });
  EXPECT_EQ(why, "");
}

// Where the kernel has Landlock's signal scope (ABI 6), the domain alone refuses a signal to a process outside it.
TEST(Lockdown, TheLandlockDomainSignalsNothingOutsideIt) {
  if (syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U /* VERSION */) < 6)
    GTEST_SKIP() << "Landlock ABI below 6: the syscall filter is the only guard";
  std::string why = in_child([] {
    const pid_t parent = getppid();
    if (std::string n = pkb::runner::hide_paths({"/nonexistent-pkb-test"}, {}); !n.empty()) return "SKIP " + n;
    std::string w = expect_errno("kill of the parent", kill(parent, 0), EPERM);
    if (kill(getpid(), 0) != 0) w += "a signal to itself was refused; ";
    return w;
  });
  if (why.rfind("SKIP ", 0) == 0) GTEST_SKIP() << why;
  EXPECT_EQ(why, "");
}

TEST(Lockdown, HiddenPathsCannotBeOpenedAndTheRestCan) {
  pkb::test::TempDir tmp;
  fs::create_directories(tmp.path() / "hidden/granted");
  pkb::test::write_file(tmp.path() / "hidden/secret", "s");
  pkb::test::write_file(tmp.path() / "hidden/granted/mine", "m");
  pkb::test::write_file(tmp.path() / "open", "o");
  std::string note;
  std::string why = in_child([&] {
    const std::string self = "/proc/" + std::to_string(getpid()), parent = "/proc/" + std::to_string(getppid());
    std::string n = pkb::runner::hide_paths({(tmp.path() / "hidden").string(), "/proc"},
                                            {(tmp.path() / "hidden/granted").string(), self});
    if (!n.empty()) return "SKIP " + n;
    auto opens = [](const fs::path& p) {
      int fd = open(p.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) close(fd);
      return fd >= 0;
    };
    std::string w;
    if (opens(tmp.path() / "hidden/secret")) w += "a hidden file opened; ";
    if (opens(parent + "/status")) w += "another process's /proc entry opened; ";
    if (!opens(tmp.path() / "hidden/granted/mine")) w += "a granted file beneath a hidden path did not open; ";
    if (!opens(tmp.path() / "open")) w += "a file outside the hidden paths did not open; ";
    if (!opens("/proc/self/status")) w += "its own /proc entry did not open; ";
    if (!opens("/etc/passwd")) w += "a system file did not open; ";
    return w;
  });
  if (why.rfind("SKIP ", 0) == 0) GTEST_SKIP() << why;
  EXPECT_EQ(why, "");
}

}  // namespace
