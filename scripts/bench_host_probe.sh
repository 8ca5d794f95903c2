#!/usr/bin/env bash
# Benchmark (not a test): how far apart two processes' host probes fall on this host. Host drift re-times a correct
# candidate's baselines when its timing's median chase probe and its cached baseline's are more than 1.2x apart
# (kHostDriftRatio), so on an idle host that should almost never happen between two processes. For each probe shape
# (the one until 2026-12-06, one walk of a 1 MiB table, and today's, the best of three walks of 512 KiB), PROCESSES
# runs of tests/bench/host_probe_bench.cpp, one after another, each its median over REPS repetitions (the quick
# preset's timings have 1-2, the standard one up to 10); then the spread (largest over smallest median) and the share
# of process pairs more than 1.2x apart.
# Usage: scripts/bench_host_probe.sh [PROCESSES=16] [REPS=1]; PKB_BUILD_DIR as scripts/build.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PKB_BUILD_DIR:-$root/build}
n=${1:-16} reps=${2:-1}
cmake --build "$build" --target pkb_bench_host_probe >/dev/null
bench="$build/tests/pkb_bench_host_probe"
for shape in "1024 1" "512 3"; do
  read -r kib walks <<<"$shape"
  medians=()
  for _ in $(seq "$n"); do medians+=("$("$bench" --table-kib "$kib" --walks "$walks" --reps "$reps" | cut -d' ' -f1)"); done
  python3 - "$kib" "$walks" "$reps" "${medians[@]}" <<'PY'
import itertools, sys
kib, walks, m = sys.argv[1], sys.argv[2], sorted(float(x) for x in sys.argv[4:])
pairs = list(itertools.combinations(m, 2))
beyond = sum(1 for a, b in pairs if max(a, b) / min(a, b) > 1.2)
print(f"{kib} KiB, best of {walks}, median of {sys.argv[3]}: medians {' '.join(f'{x:.0f}' for x in m)} us; spread {m[-1] / m[0]:.2f}x; "
      f"{beyond} of {len(pairs)} process pairs beyond 1.2x")
PY
done
