"""pkb-rank's dispatch pin (harness/src/core/dispatch_pin.h) for run_reference.py, which times the PyTorch-eager
baselines. pkb chooses the CPUs (dispatch_plan, one place for the rule) and passes each rank its plan in the
environment; this only applies it: while timing, the dispatching thread runs on PKB_DISPATCH_CPU and the process's
other threads on PKB_DISPATCH_OTHERS; every mask is restored afterwards. Kept free of torch so that
tests/unit/dispatch_pin_test.cpp can run it.
"""
import os
import threading


class DispatchPin:
    def __init__(self, environ=os.environ):
        self.environ, self.saved, self.cpu, self.note = environ, [], -1, ""

    def __enter__(self):
        cpu, others = self.environ.get("PKB_DISPATCH_CPU", ""), self.environ.get("PKB_DISPATCH_OTHERS", "")
        if not cpu.isdigit() or not others:
            self.note = self.environ.get("PKB_DISPATCH_NOTE", "not pinned: pkb gave no dispatch plan")
            return self
        others = [int(c) for c in others.split(",")]
        me = threading.get_native_id()
        tids = [me] + [int(t) for t in os.listdir("/proc/self/task") if int(t) != me]
        for tid in tids:  # this thread first: if it cannot be pinned, nothing else moves
            try:
                before = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, [int(cpu)] if tid == me else others)
            except OSError:
                if tid == me:
                    self.note = "not pinned: sched_setaffinity refused"
                    return self
                continue  # the thread exited meanwhile
            self.saved.append((tid, before))
        self.cpu = int(cpu)
        return self

    def __exit__(self, *exc):
        for tid, mask in self.saved:
            try:
                os.sched_setaffinity(tid, mask)
            except OSError:
                pass  # the thread exited meanwhile
        return False
