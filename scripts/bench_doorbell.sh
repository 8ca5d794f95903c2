#!/usr/bin/env bash
# Benchmark (not a test): what the CPU ranks' runner protocol costs a call (docs/design/runner-and-gate.md, "CPU
# ranks: the doorbell"). Evaluates the honest all-reduce fixture on problem 1 on CPU ranks at W = 1 and 2,
# REPEATS times each, at a tiny and a larger shape, and prints per evaluation the doorbell (the runner woken and
# frozen again with nothing to do: timing.candidate.doorbell_us), the candidate's pkb median (which includes one
# doorbell) and the libtorch baseline's (which runs in pkb-rank itself: no doorbell).
# Usage: scripts/bench_doorbell.sh [repeats=3]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkb=${PKB:-${PKB_BUILD_DIR:-$root/build}/pkb}
repeats=${1:-3}
out=${OUT:-$root/results/bench_doorbell}
rm -rf "$out" && mkdir -p "$out/cand"
cp "$root/tests/fixtures/cpu/fixture.h" "$root/tests/fixtures/cpu/correct.cpp" "$out/cand/"
for shape in "64 48" "512 512"; do
  set -- $shape
  for w in 1 2; do
    for i in $(seq 1 "$repeats"); do
      "$pkb" eval "$out/cand/correct.cpp" --problem 1 -w "$w" --device cpu --param "M=$1" --param "N=$2" --json \
        --out "$out/eval" --cache "$out/cache" >"$out/M$1-w$w-$i.json" 2>/dev/null || true
    done
  done
done
python3 - "$out" <<'PY'
import glob, json, os, sys
print("| shape | W | run | status | doorbell us | candidate pkb median us | libtorch baseline median us | doorbell / candidate |")
print("|---|---|---|---|--:|--:|--:|--:|")
for f in sorted(glob.glob(os.path.join(sys.argv[1], "M*.json"))):
    name = os.path.basename(f)[:-5]
    shape, w, run = name.split("-")
    try:
        r = json.load(open(f))
    except ValueError:
        print(f"| {shape} | {w[1:]} | {run} | no record | | | | |")
        continue
    t = r.get("timing", {})
    c, b = t.get("candidate") or {}, t.get("baseline_libtorch_nccl") or {}
    d, m = c.get("doorbell_us", 0), c.get("median_us", 0)
    print(f"| {shape} | {w[1:]} | {run} | {r.get('status')} | {d:.1f} | {m:.1f} | {b.get('median_us', 0):.1f} | "
          f"{(d / m if m else 0):.2f} |")
PY
