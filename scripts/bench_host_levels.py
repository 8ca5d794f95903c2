#!/usr/bin/env python3
"""Benchmark (not a test): where a latency-bound timing's between-timing "levels" come from, on a GPU node.

Each probe process times, several times in a row with pauses between, four things on one GPU:
  dispatch: a chain of 20 tiny eager adds, a barrier (synchronize) before every call, events around it
            (pkb's method on a dispatch-bound baseline: host launch cost is inside the events);
  queued:   the same chain enqueued behind a GPU spin (torch.cuda._sleep), so every launch is queued before the
            start event fires: the GPU's own time for the chain, without host dispatch;
  copy:     one 256 MiB device copy (GPU-bound: neither host nor launch path matters);
  host:     the host time to enqueue the chain (perf_counter around the launches, no sync).
It records the CPU it ran on and the SM clock (NVML) per timing. The driver runs probes unpinned, pinned from
exec to one CPU (before CUDA starts) for a few CPUs, and prints the CV of each quantity within a process and across
processes. A quantity that is steady inside a process but moves across processes is per-process state; one that
moves with `host` is the host CPU's speed.

Usage: bench_host_levels.py [--processes N] [--timings N] [--cpus 0,8,15] > table.md
"""
import argparse, json, os, statistics, subprocess, sys, time


def probe(timings: int, calls: int) -> None:
    import torch
    torch.cuda.init()
    nvml = None
    try:
        import pynvml
        pynvml.nvmlInit()
        nvml = pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:
        pass
    x = torch.zeros(16, device="cuda")
    big = torch.empty(64 << 20, device="cuda")  # 256 MiB of fp32
    dst = torch.empty_like(big)

    def chain():
        y = x
        for _ in range(20):
            y = y + 1
        return y

    def timed(fn, prelude=None):
        out = []
        for _ in range(calls):
            torch.cuda.synchronize()
            if prelude:
                prelude()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            out.append(s.elapsed_time(e) * 1000)
        return statistics.median(out)

    def host():
        out = []
        for _ in range(calls):
            torch.cuda.synchronize()
            t = time.perf_counter()
            chain()
            out.append((time.perf_counter() - t) * 1e6)
        torch.cuda.synchronize()
        return statistics.median(out)

    for _ in range(200):
        chain()
    dst.copy_(big)
    torch.cuda.synchronize()
    rows = []
    for _ in range(timings):
        with open("/proc/self/stat") as f:
            cpu = int(f.read().rsplit(")", 1)[1].split()[36])
        clock = pynvml.nvmlDeviceGetClockInfo(nvml, pynvml.NVML_CLOCK_SM) if nvml else None
        rows.append({
            "cpu": cpu, "sm_mhz": clock,
            "dispatch": timed(chain), "queued": timed(chain, lambda: torch.cuda._sleep(2_000_000)),
            "copy": timed(lambda: dst.copy_(big)), "host": host(),
        })
        time.sleep(0.3)
    print(json.dumps(rows))


def cv(xs):
    return 100 * statistics.pstdev(xs) / statistics.mean(xs) if len(xs) > 1 and statistics.mean(xs) else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--processes", type=int, default=6)
    ap.add_argument("--timings", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--cpus", default="0,8,15", help="CPUs to pin probe processes to from exec")
    a = ap.parse_args()
    if a.probe:
        return probe(a.timings, a.calls)
    conditions = [("unpinned", None)] + [(f"cpu {c}", {int(c)}) for c in a.cpus.split(",") if c]
    keys = ("dispatch", "queued", "copy", "host")
    print(f"processes per condition: {a.processes}, timings per process: {a.timings}, calls per timing: {a.calls}\n")
    print("| condition | quantity | per-process medians (us) | mean within-process CV % | across-process CV % |")
    print("|---|---|---|--:|--:|")
    raw = {}
    for name, cpus in conditions:
        procs = []
        for _ in range(a.processes):
            pre = (lambda c=cpus: os.sched_setaffinity(0, c)) if cpus else None
            r = subprocess.run([sys.executable, __file__, "--probe", "--timings", str(a.timings), "--calls",
                                str(a.calls)], capture_output=True, text=True, preexec_fn=pre, timeout=300)
            if r.returncode != 0:
                print(f"probe failed ({name}): {r.stderr[-500:]}", file=sys.stderr)
                continue
            procs.append(json.loads(r.stdout.strip().splitlines()[-1]))
        raw[name] = procs
        for k in keys:
            meds = [statistics.median(t[k] for t in p) for p in procs]
            within = statistics.mean(cv([t[k] for t in p]) for p in procs) if procs else 0
            print(f"| {name} | {k} | {' '.join(f'{m:.1f}' for m in meds)} | {within:.1f} | {cv(meds):.1f} |")
    print("\nraw (per process: per timing cpu, sm_mhz, dispatch, queued, copy, host):")
    print(json.dumps(raw))


if __name__ == "__main__":
    main()
