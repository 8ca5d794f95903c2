"""pkb-rank's dispatch pin (harness/src/core/dispatch_pin.h) for run_reference.py, which times the PyTorch-eager
baselines: while timing, the dispatching thread runs on its local rank's own physical core, counted from the last,
and the process's other threads outside every local rank's dispatch core; nothing is pinned below two physical
cores per local rank. Kept free of torch so that tests/unit/dispatch_pin_test.cpp can hold it to pkb-rank's choices.
"""
import os
import threading


def parse_cpu_list(text):
    """A kernel CPU list ("0-3,8") as a sorted list; [] for text that is not one."""
    cpus = set()
    for part in text.replace("\n", "").replace(" ", "").split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or int(hi or lo) < int(lo):
            return []
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return sorted(cpus)


def physical_cores(allowed, sys_cpu="/sys/devices/system/cpu"):
    """As harness/src/core/dispatch_pin.h: allowed CPUs grouped by physical core, groups by their first CPU."""
    mine, placed, cores = set(allowed), set(), []
    for cpu in sorted(allowed):
        if cpu in placed:
            continue
        try:
            with open(f"{sys_cpu}/cpu{cpu}/topology/thread_siblings_list") as f:
                siblings = parse_cpu_list(f.read())
        except OSError:
            siblings = []
        core = [c for c in siblings if c in mine and c not in placed]
        if cpu not in core:
            core = [cpu]
        placed.update(core)
        cores.append(core)
    return sorted(cores, key=lambda c: c[0])


def dispatch_cores(cores, local_ranks):
    """Each local rank's dispatch core: distinct physical cores from the last down; [] below 2 per rank."""
    if local_ranks < 1 or len(cores) < 2 * local_ranks:
        return []
    return list(reversed(cores))[:local_ranks]


class DispatchPin:
    """As pkb-rank's DispatchPin (harness/src/core/dispatch_pin.h): while timing, this (the dispatching) thread runs
    on its local rank's dispatch core and the process's other threads outside every local rank's dispatch core;
    every mask is restored afterwards."""

    def __init__(self, local_rank, local_ranks, sys_cpu="/sys/devices/system/cpu"):
        self.local_rank, self.local_ranks, self.sys_cpu = local_rank, local_ranks, sys_cpu
        self.saved, self.cpu, self.note = [], -1, ""

    def __enter__(self):
        if not 0 <= self.local_rank < self.local_ranks:
            self.note = "not pinned: no local rank given"
            return self
        allowed = sorted(os.sched_getaffinity(0))
        dispatch = dispatch_cores(physical_cores(allowed, self.sys_cpu), self.local_ranks)
        if not dispatch:
            self.note = (f"not pinned: {len(allowed)} allowed CPUs hold fewer than 2 physical cores for each of "
                         f"{self.local_ranks} local ranks")
            return self
        reserved = {c for core in dispatch for c in core}
        others = [c for c in allowed if c not in reserved]
        me = threading.get_native_id()
        tids = [me] + [int(t) for t in os.listdir("/proc/self/task") if int(t) != me]
        for tid in tids:
            try:
                before = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, [dispatch[self.local_rank][0]] if tid == me else others)
            except OSError:
                if tid == me:
                    self.note = "not pinned: sched_setaffinity refused"
                    return self
                continue
            self.saved.append((tid, before))
        self.cpu = dispatch[self.local_rank][0]
        return self

    def __exit__(self, *exc):
        for tid, mask in self.saved:
            try:
                os.sched_setaffinity(tid, mask)
            except OSError:
                pass  # the thread exited meanwhile
        return False
