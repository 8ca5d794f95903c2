#!/usr/bin/env bash
# Benchmark (not a test): how far apart two processes' host probes fall on this host. Host drift re-times a correct
# candidate's baselines when its timing's median chase probe and its cached baseline's are more than 1.2x apart
# (kHostDriftRatio), so on an idle host that should almost never happen between two processes. For each probe shape
# (the one until 2026-12-06, one walk of a 1 MiB table, and today's, the best of three walks of 512 KiB), PROCESSES
# runs of tests/bench/host_probe_bench.cpp, one after another, each its median over REPS repetitions (the quick
# preset's timings have 1-2, the standard one up to 10); then the spread (largest over smallest median) and the share
# of process pairs more than 1.2x apart.
# The probe's shape once more with its table in one transparent huge page (its lines then fall on the same cache sets
# in every process). Beside each, the same for the multiply chain (host_probe_us, no memory): where both spread, the
# processes ran on cores at different clocks; where only the chase spreads, the table's placement in the caches
# differs.
# Usage: scripts/bench_host_probe.sh [PROCESSES=16] [REPS=1]; PKB_BUILD_DIR as scripts/build.sh; PKB_PROBE_CPU=N runs
# every process on CPU N (taskset), which takes the core out of the spread.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PKB_BUILD_DIR:-$root/build}
n=${1:-16} reps=${2:-1}
cmake --build "$build" --target pkb_bench_host_probe >/dev/null
bench="$build/tests/pkb_bench_host_probe"
pin=()
[ -z "${PKB_PROBE_CPU:-}" ] || pin=(taskset -c "$PKB_PROBE_CPU")
for shape in "1024 1 0" "512 3 0" "512 3 1"; do
  read -r kib walks huge <<<"$shape"
  medians=()  # "chase chain" per process
  for _ in $(seq "$n"); do medians+=("$(${pin[@]+"${pin[@]}"} "$bench" --table-kib "$kib" --walks "$walks" --reps "$reps" --huge "$huge")"); done
  python3 - "$kib" "$walks" "$reps" "${pin[*]:-}" "${medians[@]}" <<'PY'
import itertools, sys
kib, walks, reps, pin = sys.argv[1:5]
def spread(m):
    m = sorted(m)
    beyond = sum(1 for a, b in itertools.combinations(m, 2) if max(a, b) / min(a, b) > 1.2)
    return f"medians {' '.join(f'{x:.0f}' for x in m)} us; spread {m[-1] / m[0]:.2f}x; {beyond} of {len(m) * (len(m) - 1) // 2} process pairs beyond 1.2x"
rows = [line.split() for line in sys.argv[5:]]
huge = f", in a huge page ({sum(r[2:] == ['huge'] for r in rows)} of {len(rows)} granted)" if any(r[2:] for r in rows) else ""
print(f"{kib} KiB, best of {walks}, median of {reps}{huge}{', ' + pin if pin else ''}: chase {spread([float(r[0]) for r in rows])}")
print(f"  multiply chain: {spread([float(r[1]) for r in rows])}")
PY
done
