#!/usr/bin/env bash
# Benchmark (not a test) of pkb serve: (1) throughput of N submissions through the server against the same evaluations
# as `pkb eval` processes, as many at once as the server has slots (what `pkb run` does with its slots); (2) the
# server's own overhead per evaluation: the time in its slot beyond the pkb eval child's wall (p50, p99); (3) the
# server's memory with 10,000 queued items.
# Usage: scripts/bench_serve.sh [N=200] [SLOTS=2] [QUEUED=10000] [ROUNDS=5] (N = 0: the memory part only); the two
# sides of (1) alternate in ROUNDS rounds of N/ROUNDS each, so a shared machine's changing load weighs on both.
# PKB_BENCH_SET picks what is evaluated: `fixtures` (default), the CPU fixtures (tests/fixtures/cpu) at W = 2 on CPU
# ranks; `experts`, the expert kernels of problems 1-8 (problems/*/solution.cu) at W = 1 on the GPU, full shapes
# (SLOTS 1 on one GPU).
# Goals (issue 46): within 10% of pkb eval's throughput, overhead p99 <= 50 ms, <= 200 MB with 10,000 queued.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkb=${PKB:-${PKB_BUILD_DIR:-$root/build}/pkb}
n=${1:-200} slots=${2:-2} queued=${3:-10000} rounds=${4:-5}
work=$(mktemp -d /tmp/pkb-bench-serve.XXXXXX)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/src"
# The items, round robin: sources[i] (a file in $work/src, what a client submits) on problem problems[i].
sources=() problems=()
if [ "${PKB_BENCH_SET:-fixtures}" = experts ]; then
  device=cuda world=1 params=() shape={}
  for d in "$root"/problems/00[1-8]_*/; do
    f=$(basename "$d")
    cp "$d/solution.cu" "$work/src/$f.cu"
    sources+=("$f.cu") problems+=("$((10#${f%%_*}))")
  done
else
  device=cpu world=2 params=(--param M=64 --param N=48) shape='{"M": 64, "N": 48}'  # the same shape twice
  for f in correct wrong_value nan_output compile_error error_code mutate_input missing_run partial_write; do
    # each fixture as one file, fixture.h inlined
    python3 - "$root/tests/fixtures/cpu" "$f" >"$work/src/$f.cpp" <<'PY'
import sys
d, f = sys.argv[1], sys.argv[2]
print(open(f"{d}/{f}.cpp").read().replace('#include "fixture.h"', open(f"{d}/fixture.h").read()))
PY
    sources+=("$f.cpp") problems+=(1)
  done
fi
items=()
for k in "${!sources[@]}"; do items+=("${problems[$k]}:${sources[$k]}"); done
flags=(-w "$world" --device "$device" "${params[@]}" --trials 2 --warmup 1 --iters 5 --paper-warmup 1
       --paper-iters 3 --min-reps 1 --max-reps 2 --timeout 20)  # the server's "quick" preset and --timeout 20
start_server() {  # DATA [flags...]: starts pkb serve, sets server_pid and url
  local data=$1; shift
  "$pkb" serve --data "$data" --port 0 --device "$device" --cache "$work/cache" --timeout 20 "$@" >"$data.out" 2>"$data.err" &
  server_pid=$!
  for _ in $(seq 1 200); do grep -q listening "$data.out" 2>/dev/null && break; sleep 0.05; done
  url=$(grep -o 'http://[0-9.:]*' "$data.out")
}

# One round of pkb eval: evaluations FIRST..FIRST+COUNT-1 (the items round robin), SLOTS at once; its wall (s).
eval_round() {
  local t0 i k
  t0=$(date +%s.%N)
  for i in $(seq "$1" $(($1 + $2 - 1))); do
    k=$((i % ${#sources[@]}))
    while [ "$(jobs -rp | wc -l)" -ge "$slots" ]; do wait -n || true; done
    "$pkb" eval "$work/src/${sources[$k]}" --problem "${problems[$k]}" "${flags[@]}" --out "$work/eval" \
      --cache "$work/cache" --json >"$work/walls/eval.$i.json" 2>/dev/null &
  done
  wait || true
  awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }'
}

# The same evaluations as one batch through the server; its wall (s). Each done evaluation's overhead (slot time
# beyond the child's wall, s) is appended to $work/walls/o, each child's record written beside it.
serve_round() {
  python3 - "$root/scripts" "$url" "$token" "$work/src" "$1" "$2" "$work/walls/o" "$world" "$shape" \
    "${items[@]}" <<'PY'
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pkb_client import Client
url, token, src, first, count, overhead = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
world, shape, kinds = int(sys.argv[8]), json.loads(sys.argv[9]), [x.split(":", 1) for x in sys.argv[10:]]  # PROBLEM:FILE
c = Client(url, token, timeout=600)
items = []
for i in range(first, first + count):
    problem, name = kinds[i % len(kinds)]
    item = {"problem": int(problem), "world": world, "timing": "quick", "source": open(f"{src}/{name}").read()}
    if shape:
        item["params"] = shape
    items.append(item)
t0 = time.monotonic()
rows = c.evaluate(items)
wall = time.monotonic() - t0
with open(overhead, "a") as f:
    for r in rows:
        f.write(f"{r['evaluation_s'] - r['child_wall_s']}\n" if r.get("state") == "done" else "failed\n")
done = [r for r in rows if r.get("state") == "done"]
for i, r in zip(range(first, first + count), rows):  # each child's record, for the stage breakdown
    json.dump(r.get("record") or {}, open(f"{overhead}.serve.{i}.json", "w"))
child = sum(r["child_wall_s"] for r in done) / len(done) if done else float("nan")
print(f"{wall} {child}")
PY
}

# Where a round's time went on each side: the mean of each stage's wall (at least 50 ms) in the records (record.wall)
# of pkb eval and of the server's children, and which of each re-timed their baselines (the host probes' ratio that
# did it).
stage_breakdown() {
  python3 - "$work/walls" "$1" "$2" <<'PY'
import json, sys
from collections import defaultdict
walls, first, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return {}
sides = {"eval": [load(f"{walls}/eval.{i}.json") for i in range(first, first + count)],
         "serve": [load(f"{walls}/o.serve.{i}.json") for i in range(first, first + count)]}
means, retimed = {}, {}
for side, recs in sides.items():
    sums = defaultdict(float)
    for r in recs:
        for k, v in (r.get("wall") or {}).items():
            for name, x in (v.items() if isinstance(v, dict) else [("", v)]):  # candidate_phases: one level down
                if isinstance(x, (int, float)):
                    sums[f"{k}.{name}" if name else k] += x / len(recs)
    means[side] = sums
    retimed[side] = [(r.get("timing") or {}).get("baseline_retimed") for r in recs]
    retimed[side] = [x.get("host_speed_ratio", 0) for x in retimed[side] if x]  # what triggered each re-time
keys = sorted(k for k in set(means["eval"]) | set(means["serve"])  # the stages that took time
              if k.endswith("_s") or k.startswith("candidate_phases.")
              if max(means["eval"].get(k, 0), means["serve"].get(k, 0)) >= 0.05)
print("  stages, s an evaluation (pkb eval / serve's children): " +
      ", ".join(f"{k} {means['eval'].get(k, 0):.2f}/{means['serve'].get(k, 0):.2f}" for k in keys) +
      f"; baselines re-timed {len(retimed['eval'])}/{len(retimed['serve'])}" +
      "".join(f" ({side}: host probe ratios {' '.join(f'{x:.2f}' for x in v)})" for side, v in retimed.items() if v))
PY
}

# The two sides in alternating rounds (pkb eval, then the server, ROUNDS times), so that a change of the machine's
# load during the run weighs on both alike.
throughput() {
# Warm one cache for both sides: every item's compile and its problem's reference pass.
for k in "${!sources[@]}"; do
  "$pkb" eval "$work/src/${sources[$k]}" --problem "${problems[$k]}" "${flags[@]}" --out "$work/warm" \
    --cache "$work/cache" >/dev/null || true
done
mkdir -p "$work/data" "$work/walls"
token=$("$pkb" serve token add bench --data "$work/data")
start_server "$work/data" --slots "$slots"
echo "== $n evaluations, $slots at once, in $rounds rounds: pkb eval, then the same through pkb serve --slots $slots"
eval_wall=0 serve_wall=0
for r in $(seq 0 $((rounds - 1))); do
  first=$((r * n / rounds)) count=$(((r + 1) * n / rounds - r * n / rounds))
  e=$(eval_round "$first" "$count")
  read -r s child <<<"$(serve_round "$first" "$count")"
  # With one slot, the server's children's mean wall beside pkb eval's tells a slower child from the server's own time.
  printf 'round %d: %d evaluations: pkb eval %.1f s (%.2f s of wall an evaluation), pkb serve %.1f s (its pkb eval children %.2f s each; load %s)\n' \
    "$r" "$count" "$e" "$(awk -v e="$e" -v n="$count" 'BEGIN { print e / n }')" "$s" "$child" "$(cut -d' ' -f1 /proc/loadavg)"
  stage_breakdown "$first" "$count"
  eval_wall=$(awk -v a="$eval_wall" -v b="$e" 'BEGIN { print a + b }') serve_wall=$(awk -v a="$serve_wall" -v b="$s" 'BEGIN { print a + b }')
done
python3 - "$n" "$eval_wall" "$serve_wall" "$work/walls/o" <<'PY'
import sys
n, eval_wall, serve_wall = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
lines = open(sys.argv[4]).read().split()
over = sorted(float(x) for x in lines if x != "failed")
q = lambda p: over[min(len(over) - 1, max(0, int(p * len(over) + 0.999) - 1))]
print(f"pkb eval x{n}: {eval_wall:.1f} s ({n / eval_wall:.2f} evaluations/s)")
print(f"pkb serve x{n}: {serve_wall:.1f} s ({n / serve_wall:.2f} evaluations/s), {len(over)} done; throughput "
      f"{100 * (eval_wall / serve_wall):.1f}% of pkb eval's (goal >= 90%)")
print(f"server overhead per evaluation (slot time beyond the child's wall): p50 {1000 * q(0.5):.1f} ms, "
      f"p99 {1000 * q(0.99):.1f} ms, max {1000 * over[-1]:.1f} ms (goal p99 <= 50 ms)")
PY
ticks=$(awk '{print $14 + $15}' "/proc/$server_pid/stat")  # utime + stime, in clock ticks
echo "the server's own CPU time over the run: $(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", t / hz }') s (its children not counted)"
kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
}
[ "$n" -gt 0 ] && throughput

echo "== pkb serve: memory with $queued queued items"
mkdir -p "$work/mem"
token=$("$pkb" serve token add bench --data "$work/mem")
start_server "$work/mem" --slots 1 --max-queued $((queued + 10))
python3 - "$root/scripts" "$url" "$token" "$work/src/${sources[0]}" "$queued" "$server_pid" "${problems[0]}" "$world" \
  "$shape" <<'PY'
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pkb_client import Client
url, token, src, queued, pid = sys.argv[2], sys.argv[3], open(sys.argv[4]).read(), int(sys.argv[5]), sys.argv[6]
problem, world, shape = int(sys.argv[7]), int(sys.argv[8]), json.loads(sys.argv[9])
c = Client(url, token, timeout=600)
item = {"problem": problem, "world": world, "timing": "quick", "source": src}
if shape:
    item["params"] = shape
t0 = time.monotonic()
for start in range(0, queued, 5000):
    c.submit([item for _ in range(start, min(queued, start + 5000))])
took = time.monotonic() - t0
status = dict(l.split(":", 1) for l in open(f"/proc/{pid}/status") if ":" in l)
health = c.request("GET", "/v1/health")
print(f"{queued} items of {len(src)} bytes submitted in {took:.1f} s; queued now {health['queued']}; server RSS "
      f"{status['VmRSS'].strip()}, peak {status['VmHWM'].strip()} (goal <= 200 MB)")
PY
