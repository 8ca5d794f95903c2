#!/usr/bin/env bash
# Benchmark (not a test): wall-time breakdown of one evaluation and the spread of the same candidate's time over
# repeated evaluations. Usage: scripts/bench_eval.sh CANDIDATE PROBLEM [repeats=3] [extra pkb eval options]
# The first evaluation fills the compile and reference caches; all are reported, each with the CPU seconds (user +
# system) of its whole process tree: a cached evaluation's is mostly process starts (docs/design/build-and-ci.md).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkb=${PKB:-${PKB_BUILD_DIR:-$root/build}/pkb}
cand=$1 problem=$2 repeats=${3:-3}
shift 3 2>/dev/null || shift $#
out=${OUT:-$root/results/bench_eval}
mkdir -p "$out"
for i in $(seq 1 "$repeats"); do
  TIMEFORMAT='%U %S'  # bash's time: user and system seconds of the command and the children it waited for
  { time "$pkb" eval "$cand" --problem "$problem" --json --out "$out/eval" "$@" >"$out/run$i.json" 2>"$out/run$i.err" ||
    true; } 2>"$out/cpu$i.txt"
done
python3 - "$out" "$repeats" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{out}/run{i}.json")) for i in range(1, n + 1)]
print("| run | status | CPU s | compile s | reference pass s (left after the compile) | candidate pass s | (load+heap / trials / timing: generate warm-up copies, capture alloc, loop (of it: copies made in the loop), send+check / post) | check s | total s | beyond compile s | candidate median us | copies made on the host / drawn in place / distinct contents timed |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
medians = []
for i, r in enumerate(runs, 1):
    w = r.get("wall", {})
    t = r.get("timing", {}).get("candidate") or {}
    med = t.get("median_us")
    if med:
        medians.append(med)
    total, comp = w.get("total_s", 0), w.get("compile_s", 0)
    ph = "-"
    p = w.get("candidate_phases", {})
    if p:
        ph = " / ".join(f"{p.get(k, 0):.2f}" for k in ("load_and_heap", "trials", "timing_generate",
                                                       "timing_capture_alloc", "timing_loop"))
        ph += f" ({p.get('timing_generate_in_loop', 0):.2f}) / " + " / ".join(
            f"{p.get(k, 0):.2f}" for k in ("timing_send_and_input_check", "post_timing_trial"))
    ref = f"{w.get('reference_s', 0):.2f} ({w.get('reference_wait_s', w.get('reference_s', 0)):.2f})"
    try:
        cpu = sum(float(x) for x in open(f"{out}/cpu{i}.txt").read().split()[-2:])
    except (OSError, ValueError):
        cpu = float("nan")
    print(f"| {i} | {r.get('status')} | {cpu:.2f} | {comp:.2f} | {ref} | {w.get('candidate_s', 0):.2f} | {ph} | "
          f"{w.get('check_s', 0):.2f} | {total:.2f} | {total - comp:.2f} | {med if med else '-'} | "
          f"{t.get('input_copies_made', '-')} / {t.get('copies_drawn_in_place', '-')} / {t.get('distinct_input_contents', '-')} |")
if len(medians) >= 2:
    mean = statistics.mean(medians)
    print(f"\ncandidate median over {len(medians)} evaluations: mean {mean:.2f} us, CV {100 * statistics.stdev(medians) / mean:.2f}%")
PY
