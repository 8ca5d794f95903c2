// What the runner (pkb-runner) does to itself before it loads a candidate: after it, neither the candidate nor
// anything it starts can reach another process or the paths the monitors use (docs/design/runner-and-gate.md,
// "Lockdown: other processes out of reach").
#pragma once

#include <string>
#include <vector>

namespace pkb::runner {

// Landlock: every path stays as the sandbox made it except `hidden` (and everything beneath), which cannot be opened
// at all: the sealed channel's FIFOs, the monitors' MPI session files, /dev/shm; `granted` paths beneath a hidden one
// (the runner's own directory) stay open. Returns "" or why it could not (a kernel without Landlock).
std::string hide_paths(const std::vector<std::string>& hidden, const std::vector<std::string>& granted);

// From Landlock ABI 6 the domain is also scoped: no signal to, and no abstract socket of, a process outside it.
//
// seccomp (with no_new_privs): no ptrace or cross-process memory access, no new processes (threads only), no
// signals to other processes (neither directly nor by proxy: I/O owners, F_SETSIG, leases, dnotify, a terminal's
// process group), no inotify or fanotify watches, no io_uring or asynchronous I/O (kernel work that would go on
// while the runner is frozen), no sockets but Unix ones, no exec. Throws pkb::Error if the filter cannot be installed.
void restrict_syscalls();

}  // namespace pkb::runner
