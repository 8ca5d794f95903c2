#!/usr/bin/env bash
# pkb serve's Slurm workers on a real one-node Slurm cluster (scripts/slurm/local_cluster.sh): a server on
# loopback with no slots of its own (--slots 0) and a 2-task array job of scripts/slurm/pkb-worker.sbatch pointed at
# it; a batch of 4 CPU evaluations (problem 1, W = 2, M=64 N=48, the quick preset) must finish, each exactly once
# (attempts 1) with its fixture's status, its record posted by one of the two tasks (the row names the worker);
# both tasks then exit once idle (--idle-exit) and the job leaves the queue. Workers killed mid-evaluation are
# tests/serve/worker_test.cpp's (loopback, without Slurm).
# Exit 77 (ctest: skipped) only when the daemons cannot start here (the message says why). Everything it starts it
# stops, also on failure.
# Usage: slurm_workers.sh PKB_BINARY [CACHE] (CACHE: pkb eval's, shared with other tests; default a fresh one)
set -euo pipefail
pkb=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/pkb-slurm-workers.XXXXXX)
cache=${2:-$tmp/cache}
cluster=$tmp/cluster
server_pid=
cleanup() {
  [ -n "${SLURM_CONF:-}" ] && scancel --quiet --user="$(id -un)" 2>/dev/null || true
  "$root/scripts/slurm/local_cluster.sh" stop "$cluster" || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  for pid in $(pgrep -f "^bwrap .*$tmp") $(pgrep -f "pkb-(rank|candidate).*$tmp"); do kill -9 "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$tmp"/out/*.out "$tmp/server.err" "$cluster/slurmctld.log"; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done
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

data=$tmp/serve
client_token=$("$pkb" serve token add trainer --data "$data")
PKB_WORKER_TOKEN=$("$pkb" serve token add slurm --worker --data "$data")
export PKB_WORKER_TOKEN  # the tasks get it from sbatch's environment, not from a command line
"$pkb" serve --data "$data" --port 0 --device cpu --slots 0 --lease 15 --timeout 30 >"$tmp/server.out" 2>"$tmp/server.err" &
server_pid=$!
for _ in $(seq 200); do grep -q listening "$tmp/server.out" 2>/dev/null && break; sleep 0.05; done
url=$(grep -o 'http://[0-9.:]*' "$tmp/server.out") || fail "pkb serve did not start"
grep -q "0 slot(s)" "$tmp/server.out" || fail "the server has slots of its own: $(cat "$tmp/server.out")"

# The batch first (so no worker can go idle before there is work), then the workers.
python3 - "$root/scripts" "$url" "$client_token" "$root/tests/fixtures/cpu" >"$tmp/ids.json" <<'PY' || fail "the submission"
import json, sys
sys.path.insert(0, sys.argv[1])
from pkb_client import Client
url, token, fixtures = sys.argv[2], sys.argv[3], sys.argv[4]
def source(name):
    return open(f"{fixtures}/{name}.cpp").read().replace('#include "fixture.h"', open(f"{fixtures}/fixture.h").read())
names = ["correct", "wrong_value", "correct", "wrong_value"]
items = [{"problem": 1, "world": 2, "params": {"M": 64, "N": 48}, "timing": "quick", "source": source(n)} for n in names]
answer = Client(url, token).submit(items)
print(json.dumps([[name, item["id"]] for name, item in zip(names, answer["items"])]))
PY
mkdir -p "$tmp/out"
job=$(PKB_SERVER=$url PKB_DEVICE=cpu PKB_BINARY=$pkb sbatch --parsable --array=0-1 --gpus-per-node=0 \
        --cpus-per-task=1 --chdir="$root" --output="$tmp/out/worker-%A_%a.out" \
        "$root/scripts/slurm/pkb-worker.sbatch" --slots 1 --idle-exit 4 --cache "$cache")
echo "submitted worker array job $job against $url"

python3 - "$root/scripts" "$url" "$client_token" "$tmp/ids.json" "$job" <<'PY' || fail "the batch"
import collections, json, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from pkb_client import Client
url, token, submitted, job = sys.argv[2], sys.argv[3], json.load(open(sys.argv[4])), sys.argv[5]
client = Client(url, token, timeout=120)
ids = [id for _, id in submitted]
deadline = time.monotonic() + 150
while True:  # until every evaluation has finished; failed at once when the workers are gone
    states = [r["state"] for r in client.results(ids, record=False)]
    if all(s in ("done", "failed", "cancelled") for s in states):
        break
    gone = not subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True).stdout.strip()
    assert not gone, f"the worker job ended with evaluations unfinished: {states}"
    assert time.monotonic() < deadline, f"not finished within 150 s: {states}"
    time.sleep(0.5)
rows = {r["id"]: r for r in client.results(ids)}
expected = {"correct": "correct", "wrong_value": "incorrect"}
by_worker = collections.Counter()
for name, id in submitted:
    row = rows[id]
    print(id, name, row["state"], row.get("status"), "attempts", row["attempts"], "by", row.get("worker"))
    assert row["state"] == "done", row
    assert row["status"] == expected[name], (name, row.get("status"))
    assert row["attempts"] == 1, "claimed more than once: " + str(row["attempts"])
    assert row["record"]["schema"] == "pkb.result/1"
    task = row.get("worker", "").split("/", 1)[-1].split("@")[0]
    assert task in (f"{job}_0", f"{job}_1"), "not posted by a task of the array job: " + str(row.get("worker"))
    by_worker[task] += 1
print("evaluations by task:", dict(by_worker))
PY
# Both tasks exit 0 once idle for 4 s, and the job leaves the queue.
for _ in $(seq 300); do [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break; sleep 0.1; done
[ -z "$(squeue -h -j "$job" 2>/dev/null)" ] || fail "the workers did not exit once idle: $(squeue -h -j "$job")"
for i in 0 1; do
  grep -q "exiting after" "$tmp/out/worker-${job}_$i.out" || fail "task $i did not exit on --idle-exit"
done
grep -h "exiting after" "$tmp"/out/worker-*.out
health=$(curl -s "$url/v1/health")
echo "server: $health"
echo "$health" | grep -q '"queued":0' && echo "$health" | grep -q '"running":0' || fail "work left on the server"
echo PASS
