#!/usr/bin/env bash
# Kills `pkb run` midway (SIGINT, as Ctrl-C would, while a hanging candidate runs) and runs the same command
# again: the run must finish with every sample recorded exactly once, no malformed line, and no rank left behind.
# Usage: run_kill_resume.sh PKB_BINARY CACHE_DIR
set -euo pipefail
pkb=$1 cache=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export TMPDIR=$tmp  # pkb's temporary files (a killed pkb leaves its sandbox's seal directory) go with it
fixture() {  # a CPU fixture with its header inlined: candidates are copied into a folder without fixture.h
  sed -e "/#include \"fixture.h\"/r $root/tests/fixtures/cpu/fixture.h" -e '/#include "fixture.h"/d' \
    "$root/tests/fixtures/cpu/$1.cpp"
}
mkdir -p "$tmp/replay/001_allreduce"
fixture correct >"$tmp/replay/001_allreduce/sample_0.cu"
fixture spin_forever >"$tmp/replay/001_allreduce/sample_1.cu"
fixture wrong_value >"$tmp/replay/001_allreduce/sample_2.cu"
run=$tmp/run
args=(run --model "replay:$tmp/replay" --problems 1 --samples 3 --device cpu -w 2 --param M=64 --param N=48
      --trials 1 --warmup 1 --iters 3 --paper-warmup 1 --paper-iters 3 --min-reps 1 --max-reps 2 --timeout 8
      --out "$run" --cache "$cache")

"$pkb" "${args[@]}" >"$tmp/first.out" 2>"$tmp/first.err" &
pid=$!
for _ in $(seq 1200); do  # until the first record lands; the spinning sample then holds the run for 8 s
  [ -s "$run/results.jsonl" ] && break
  sleep 0.1
done
[ -s "$run/results.jsonl" ] || { echo "FAIL: no record within 120 s"; cat "$tmp/first.err"; exit 1; }
sleep 1
# The run's processes (mpirun and the ranks in their sandbox, whose command lines hold no host path to find them by),
# each with its start time, so that a number given to a new process later is not taken for one of them.
start_of() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
descendants() { local c; for c in $(pgrep -P "$1"); do echo "$c $(start_of "$c")"; descendants "$c"; done; }
alive() { local p s; while read -r p s; do [ -n "$p" ] && [ "$(start_of "$p")" = "$s" ] && echo "$p"; done <<<"$run_procs"; }
run_procs=$(descendants "$pid")
kill -INT "$pid"
rc=0; wait "$pid" || rc=$?
echo "first invocation interrupted (exit $rc) after $(wc -l <"$run/results.jsonl") record(s), $(wc -l <<<"$run_procs") processes below it"
[ "$rc" -ne 0 ] || { echo "FAIL: the run finished before it was interrupted; the test proves nothing"; exit 1; }
for _ in $(seq 100); do  # SIGKILLed ranks take a moment to be reaped
  [ -z "$(alive)" ] && break
  sleep 0.1
done
[ -z "$(alive)" ] || { echo "FAIL: processes of the interrupted run survived: $(alive)"; exit 1; }

"$pkb" "${args[@]}" >"$tmp/second.out" 2>"$tmp/second.err" || { echo "FAIL: resumed run failed"; cat "$tmp/second.err"; exit 1; }
grep -q "resuming: [12] of 3 samples already recorded" "$tmp/second.err" ||
  { echo "FAIL: the second invocation did not resume"; cat "$tmp/second.err"; exit 1; }
lines=$(wc -l <"$run/results.jsonl")
distinct=$(grep -o '"sha256":"[0-9a-f]*"' "$run/results.jsonl" | sort -u | wc -l)
echo "after resuming: $lines records, $distinct distinct candidates"
[ "$lines" -eq 3 ] && [ "$distinct" -eq 3 ] || { echo "FAIL: expected 3 records of 3 candidates"; exit 1; }
for s in correct timeout incorrect; do
  grep -q "\"status\":\"$s\"" "$run/results.jsonl" || { echo "FAIL: no $s record"; exit 1; }
done
grep -q '"malformed": 0' "$run/report.json" || { echo "FAIL: report.json counts malformed lines"; exit 1; }
echo PASS
