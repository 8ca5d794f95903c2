#!/usr/bin/env bash
# Benchmark (not a test): the wall time of one `pkb run` and where it went, from its records: compiles, reference
# passes (what was left of them after the compile), candidate passes, checks, per evaluation and summed, beside the
# run's own wall (evaluations overlap where GPU slots and compile jobs allow). Usage:
#   scripts/bench_run.sh RUN_DIR [pkb run options...]      e.g. scripts/bench_run.sh /tmp/r --model expert --problems 1-8 -w 2
# The run directory is emptied first, so every sample is evaluated (the caches under --cache stay as they are).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkb=${PKB:-${PKB_BUILD_DIR:-$root/build}/pkb}
dir=$1
shift
rm -rf "$dir"
start=$EPOCHREALTIME
"$pkb" run --out "$dir" "$@" >"$dir.log" 2>&1
rc=$?
wall=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
python3 - "$dir" "$wall" "$rc" <<'PY'
import json, sys
d, wall, rc = sys.argv[1], float(sys.argv[2]), sys.argv[3]
recs = []
try:
    for line in open(f"{d}/results.jsonl"):
        line = line.strip()
        if line:
            recs.append(json.loads(line))
except FileNotFoundError:
    pass
keys = ("compile_s", "reference_wait_s", "candidate_s", "check_s", "total_s")
print("| problem | sample | status | compile s | reference s (left after the compile) | candidate pass s | check s | total s |")
print("|---|---|---|---|---|---|---|---|")
sums = dict.fromkeys(keys, 0.0)
for r in recs:
    w = r.get("wall", {})
    for k in keys:
        sums[k] += w.get(k, 0) or 0
    folder = (r.get("problem") or {}).get("folder", "?")
    print(f"| {folder} | {r.get('sample', '-')} | {r.get('status')} | "
          + " | ".join(f"{w.get(k, 0) or 0:.2f}" for k in keys) + " |")
print(f"| all {len(recs)} | | | " + " | ".join(f"{sums[k]:.2f}" for k in keys) + " |")
print(f"\npkb run: exit {rc}, {wall:.1f} s of wall for {len(recs)} evaluations "
      f"(their totals sum to {sums['total_s']:.1f} s: overlap {sums['total_s'] / wall if wall else 0:.2f}x)")
PY
