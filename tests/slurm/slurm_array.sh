#!/usr/bin/env bash
# pkb on a real one-node Slurm cluster (scripts/slurm/local_cluster.sh: munged, slurmctld, slurmd, all state
# under a temporary directory): a 2-task array job of scripts/slurm/pkb-array.sbatch runs `pkb run --device
# cpu --model replay:...` as shards 0/2 and 1/2; shard 1 is requeued (`scontrol requeue`, what Slurm does
# after a node failure) while its last sample runs, and resumes. `pkb report` over the shards must then give
# the report the unsharded run gives: the same samples with the same statuses and the same numbers, except
# times (two evaluations of a kernel never time alike); tests/unit shows the merge exact to the byte.
# Exit 77 (ctest: skipped) only when the daemons cannot start for a reason outside the test (the message says
# which). Everything it starts it stops, also on failure.
# Usage: slurm_array.sh PKB_BINARY
set -euo pipefail
pkb=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/pkb-slurm-test.XXXXXX)
cluster=$tmp/cluster
cleanup() {
  [ -n "${SLURM_CONF:-}" ] && scancel --quiet --user="$(id -un)" 2>/dev/null || true
  "$root/scripts/slurm/local_cluster.sh" stop "$cluster" || true
  # Whatever still runs with this test's directory on its command line is this test's (a failed run may leave
  # some): the sandboxes' namespace inits first (killing one ends its namespace), then anything left.
  for pid in $(pgrep -f "^bwrap .*$tmp") $(pgrep -f "pkb-(rank|candidate).*$tmp"); do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/sharded/shard-*/results.jsonl; do
    echo "--- $f"; python3 -c 'import json,sys; [print(r["sample"], r["status"], r["time"], r["message"][:2000]) for r in map(json.loads, open(sys.argv[1]))]' "$f"
  done
  for f in "$tmp"/out/pkb-*.out "$cluster/slurmctld.log" "$cluster/slurmd.log"; do
    [ -f "$f" ] && { echo "--- $f"; tail -n 25 "$f"; }
  done
  exit 1
}

rc=0
conf=$("$root/scripts/slurm/local_cluster.sh" start "$cluster" 2>"$tmp/cluster.err") || rc=$?
if [ "$rc" = 3 ]; then
  echo "SKIP: the Slurm daemons cannot start on this machine:"; cat "$tmp/cluster.err"; exit 77
fi
[ "$rc" = 0 ] || { cat "$tmp/cluster.err"; fail "local_cluster.sh start exited $rc"; }
export SLURM_CONF=$conf
echo "cluster up: $(sinfo -h -o '%P %D %T')"

fixture() {  # a CPU fixture with its header inlined: candidates are copied into a folder without fixture.h
  sed -e "/#include \"fixture.h\"/r $root/tests/fixtures/cpu/fixture.h" -e '/#include "fixture.h"/d' \
    "$root/tests/fixtures/cpu/$1.cpp"
}
# 4 samples: shard 0/2 takes samples 0-1, shard 1/2 samples 2-3 (run/shard.h); sample 3 sleeps 8 s in its first
# call and never writes its outputs (incorrect), which holds shard 1 long enough to requeue it between its two
# records. It sleeps rather than spins and ends well before its deadline: the test runs beside others on 2 cores,
# where a correct sample needs a generous deadline (30 s: 10 s was missed once under CI load), and a sample that
# ran into it would hold a ctest slot for that long in each of its three runs.
mkdir -p "$tmp/replay/001_allreduce" "$tmp/out"
fixture correct >"$tmp/replay/001_allreduce/sample_0.cu"
fixture wrong_value >"$tmp/replay/001_allreduce/sample_1.cu"
fixture correct >"$tmp/replay/001_allreduce/sample_2.cu"
{ fixture correct | sed '/^extern "C" int pkb_run/,$d'; cat <<'CU'; } >"$tmp/replay/001_allreduce/sample_3.cu"
#include <unistd.h>
extern "C" int pkb_run(pkb_context*, const pkb_tensor*, int, pkb_tensor*, int) {
  static bool slept = false;
  if (!slept) slept = true, sleep(8);
  return 0;
}
CU
args=(--model "replay:$tmp/replay" --problems 1 --samples 4 --device cpu -w 2 --param M=64 --param N=48
      --trials 1 --warmup 1 --iters 3 --timeout 30 --cache "$tmp/cache")  # its own cache: the references must be computed, as srun steps

# pkb's temporary files in the test's directory: a sandbox's command line (bwrap's, also its namespace init's) names
# its seal directory there, so that what one leaves behind is found by the path (its ranks have none of the host's).
mkdir -p "$tmp/tmp"
export TMPDIR=$tmp/tmp
job=$(sbatch --parsable --array=0-1 --gpus-per-node=0 --cpus-per-task=1 --chdir="$root" \
        --output="$tmp/out/pkb-%A_%a.out" --export="ALL,PKB_BINARY=$pkb,PKB_LAUNCHER=srun,TMPDIR=$TMPDIR" \
        "$root/scripts/slurm/pkb-array.sbatch" "${args[@]}" --out "$tmp/sharded")
echo "submitted array job $job"
shard1=$tmp/sharded/shard-1-of-2
for _ in $(seq 900); do  # until shard 1 holds its first record; its sleeping sample then holds it for 8 s
  [ -s "$shard1/results.jsonl" ] && break
  sleep 0.1
done
[ -s "$shard1/results.jsonl" ] || fail "shard 1 recorded nothing within 90 s"
before=$(wc -l <"$shard1/results.jsonl")
scontrol requeue "${job}_1" || fail "scontrol requeue ${job}_1"
[ "$before" = 1 ] || fail "shard 1 held $before records when requeued: it was not mid-run, the test proves nothing"
echo "requeued ${job}_1 after $before record(s)"

# Done when both tasks have written their run's last line (task 1 after its restart) and left the queue.
finished() {
  grep -q "^run: " "$tmp/out/pkb-${job}_0.out" 2>/dev/null && grep -q "restart 1" "$tmp/out/pkb-${job}_1.out" &&
    [ "$(grep -c "^run: " "$tmp/out/pkb-${job}_1.out")" -ge 1 ] && [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]
}
for _ in $(seq 900); do finished && break; sleep 0.2; done
finished || fail "the array job did not finish within 180 s (task 1 must run again after its requeue): $(squeue -h -j "$job")"
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["invocations"])' "$shard1/manifest.json")" = 2 ] ||
  fail "shard 1 was not resumed (manifest invocations != 2)"
grep -q "resuming: 1 of 2 samples already recorded" "$tmp/out/pkb-${job}_1.out" || fail "shard 1 did not resume"
# PKB_LAUNCHER=srun: the reference passes ran as job steps (slurmd logs each step's launch; the sandboxed
# candidate passes use mpirun inside the sandbox).
steps=$(grep -c "launch task StepId=[0-9]*\.[0-9]" "$cluster/slurmd.log" || true)
[ "$steps" -ge 1 ] || fail "no job step ran: the reference passes did not go through srun"
echo "job steps launched by srun: $steps"
# slurmstepd's PMIx folders live in the cluster's own TmpFS: a shared /tmp/spmix_appdir_UID_JOB.STEP failed the steps
# of a second cluster on the machine (test runs side by side) while srun exited 0 (scripts/slurm/local_cluster.sh).
pmix_dir=$(srun --overlap -n 1 --mpi=pmix sh -c "ls -d '$cluster'/tmp/spmix_appdir_* 2>/dev/null" || true)
[ -n "$pmix_dir" ] || fail "a job step's PMIx folder is not in the cluster's own TmpFS ($cluster/tmp)"
# The unsharded run, afterwards (not beside the shards: 2 cores, and a correct kernel must not miss its deadline).
"$pkb" run "${args[@]}" --out "$tmp/unsharded" >"$tmp/unsharded.log" 2>&1 || { cat "$tmp/unsharded.log"; fail "the unsharded run failed"; }
# When Slurm kills a task mid-evaluation (requeue, cancel) nothing of it may survive: the candidate's sandbox is a
# session of its own (out of reach of process-group kills, and of proctrack/linuxproc once its bwrap dies), so
# pkb's SIGTERM handler kills each sandbox's namespace init, which bwrap reported (launch/process.h info_fd). No
# process of a sandbox outlives that init (a bwrap naming the test's TMPDIR); the reference passes' ranks name the
# test's directory themselves.
leftovers() { { pgrep -f "^bwrap .*$tmp"; pgrep -f "pkb-(rank|candidate).*$tmp"; } | paste -sd, -; }
for _ in $(seq 50); do [ -z "$(leftovers)" ] && break; sleep 0.1; done  # SIGKILLed ranks: reaped
if [ -n "$(leftovers)" ]; then
  ps -o pid,ppid,pgid,sid,stat,etimes,args -p "$(leftovers)" | cut -c1-150
  fail "ranks or sandboxes of the requeued task outlived it"
fi

"$pkb" report "$tmp/sharded" 2>"$tmp/report.err" || { cat "$tmp/report.err"; fail "pkb report over the shards"; }
python3 - "$tmp/unsharded" "$tmp/sharded" <<'PY' || fail "the merged report differs from the unsharded run's"
import json, sys
def samples(d):
    out = {}
    for line in open(d + "/results.jsonl"):
        r = json.loads(line)
        key = (r["problem"]["folder"], r["sample"])
        out[key] = r["status"]  # a later record of a sample supersedes
    return out
def shards(d):
    merged = {}
    for i in (0, 1):
        for line in open(f"{d}/shard-{i}-of-2/results.jsonl"):
            r = json.loads(line)
            merged[(r["problem"]["folder"], r["sample"])] = r["status"]
    return merged
# The speedup grid ("thresholds") extends to the largest measured speedup (scoring/aggregate.cpp), and host_drift
# counts samples by their host probes: timed as well.
TIMED = {"best_speedup", "geomean_speedup", "sol_candidate_pct", "sol_baseline_pct", "fast_p_at_k", "c_fast",
         "curves", "thresholds", "host_drift"}
def untimed(x):  # the report without what measured times decide
    if isinstance(x, dict): return {k: untimed(v) for k, v in x.items() if k not in TIMED}
    if isinstance(x, list): return [untimed(v) for v in x]
    return x
a, b = samples(sys.argv[1]), shards(sys.argv[2])
print("unsharded samples:", sorted(a.items()))
print("merged samples:   ", sorted(b.items()))
assert a == b, "different samples or statuses"
assert sorted(a.values()) == ["correct", "correct", "incorrect", "incorrect"], a
ra = json.load(open(sys.argv[1] + "/report.json")); rb = json.load(open(sys.argv[2] + "/report.json"))
for field in ra:
    if field != "run" and field not in TIMED:  # report.json's top-level "curves" is timed too
        ua, ub = untimed(ra[field]), untimed(rb[field])
        assert ua == ub, f"report.json {field} differs:\n unsharded {json.dumps(ua)}\n merged    {json.dumps(ub)}"
assert rb["aggregate"]["samples"] == 4 and rb["input"]["records"] == 4, rb["input"]
assert [s["index"] for s in rb["run"]["shards"]] == [0, 1]
print("merged report = unsharded report:", json.dumps(rb["aggregate"]["pass_at_k"]))
PY
lines=$(cat "$tmp"/sharded/shard-*/results.jsonl | wc -l)
[ "$lines" -eq 4 ] || fail "the shards hold $lines records, expected 4 (one per sample)"
echo PASS
