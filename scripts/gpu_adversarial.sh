#!/usr/bin/env bash
# The adversarial candidates of tests/fixtures/adversarial as CUDA files on a GPU node (the CPU suite,
# tests/security, runs them in CI): each must land in its status with nothing outside the sandbox changed.
# Usage: scripts/gpu_adversarial.sh [-w W] [extra pkb eval options]   (PKB: the pkb binary; OUT: where records go)
# Prints one line per candidate and exits non-zero if any expectation failed.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkb=${PKB:-$root/build/pkb}
out=${OUT:-$root/results/gpu_adversarial}
world=1
if [ "${1:-}" = "-w" ]; then world=$2; shift 2; fi
extra=("$@")
mkdir -p "$out"
work=$(mktemp -d)
target="$work/outside"
mkdir -p "$target" "$work/src"
echo "canary-$RANDOM$RANDOM" >"$target/canary"
marker="3000.$((100000 + RANDOM))"
secret="sk-test-$RANDOM$RANDOM"
# A loopback listener outside the sandbox that records every connection it accepts.
port_file="$work/port"
python3 - "$port_file" "$work/connections" <<'PY' &
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
while True:
    c, _ = s.accept(); open(sys.argv[2], "a").write("connected\n"); c.close()
PY
listener=$!
trap 'kill $listener 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do [ -s "$port_file" ] && break; sleep 0.1; done
port=$(cat "$port_file")
cp "$root/tests/fixtures/cpu/fixture.h" "$root/tests/fixtures/adversarial/inprocess.h" "$work/src/"  # problem 1 on the GPU
for f in "$root"/tests/fixtures/adversarial/*.cpp; do
  name=$(basename "$f" .cpp)
  { echo "#define PKB_TARGET_DIR \"$target\""; echo "#define PKB_PORT $port"; echo "#define PKB_MARKER \"$marker\""
    cat "$f"; } >"$work/src/$name.cu"
done
# poison_cache hunts in the reference cache: point it there.
cache="$out/cache"
sed -i "s|^#define PKB_TARGET_DIR .*|#define PKB_TARGET_DIR \"$cache\"|" "$work/src/poison_cache.cu"

failures=0
evaluate() {  # evaluate NAME EXPECTED_STATUS [MESSAGE_FRAGMENT]  (TIMING: extra timing options)
  local name=$1 want=$2 fragment=${3:-}
  # shellcheck disable=SC2086  # TIMING's options split on spaces
  PKB_TEST_SECRET=$secret "$pkb" eval "$work/src/$name.cu" --problem 1 -w "$world" --trials 2 --iters 30 \
    --timeout 60 --out "$out/eval" --cache "$cache" --json ${TIMING:-} "${extra[@]}" >"$out/$name.json" \
    2>"$out/$name.stderr"
  local got msg
  got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("status",""))' "$out/$name.json" 2>/dev/null)
  msg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("message",""))' "$out/$name.json" 2>/dev/null)
  local verdict=ok
  [[ "|$want|" == *"|$got|"* ]] || verdict=FAIL  # want may list statuses: a|b
  [ -z "$fragment" ] || [[ "$msg" == *"$fragment"* ]] || verdict=FAIL
  printf '%-22s %-14s (want %-14s) %s  %s\n' "$name" "$got" "$want" "$verdict" "${msg:0:100}"
  [ $verdict = ok ] || failures=$((failures + 1))
}
check() {  # check DESCRIPTION COMMAND...: an expectation about the world outside the sandbox
  if "${@:2}"; then printf '  %-60s ok\n' "$1"; else printf '  %-60s FAIL\n' "$1"; failures=$((failures + 1)); fi
}

evaluate poison_detector correct
# The fixtures that count calls learn the settings as the user who chose them knows them (the ranks show them to no
# process of the candidate's): from the first record's timing settings.
known=$(python3 - "$out/poison_detector.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["timing_settings"]
flags = [f"--{k.replace('_', '-')} {t[k]}" for k in ("warmup", "paper_warmup", "iters", "paper_iters", "min_reps", "max_reps")]
print("--trials", ",".join(str(i) for i in range(r["trials"])), *flags)
PY
)
for f in skip_when_unchecked repeat_detector; do sed -i "1i #define PKB_KNOWN_ARGS \"$known\"" "$work/src/$f.cu"; done
check "timed calls were checked" python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["checks"]["timed_calls_checked"] < 1)' "$out/poison_detector.json"
before=$(cd "$cache/reference" && find . -type f -exec sha256sum {} + | sort | sha256sum)
evaluate poison_cache incorrect
after=$(cd "$cache/reference" && find . -type f -exec sha256sum {} + | sort | sha256sum)
check "reference cache unchanged by poison_cache" test "$before" = "$after"
evaluate escape correct
check "no file written outside the sandbox" test ! -e "$target/shell-was-here" -a ! -e "$target/file-was-written"
check "no connection to the host's loopback" test ! -e "$work/connections"
check "secret and canary absent from records and logs" bash -c '! grep -rqF -e "$1" -e "$(cat "$2")" "$3"' _ "$secret" "$target/canary" "$out"
sleep 0.5
alive() {  # processes running `sleep MARKER` (not this script's own commands, which name the marker too)
  python3 - "$marker" <<'PY'
import os, sys
me = {os.getpid(), os.getppid()}
n = 0
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        args = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
    except OSError:
        continue
    n += int(p) not in me and len(args) > 1 and args[0].endswith(b"sleep") and args[1] == sys.argv[1].encode()
sys.exit(n)
PY
}
check "no process the candidate started is alive" alive
evaluate rewrite_after_return correct
check "timing not the forged 0.001 us" python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["timing"]["candidate"]["median_us"] == 0.001)' "$out/rewrite_after_return.json"
# In process the forged frames land in every FIFO the candidate holds, CUDA's own among them: a broken channel
# (runtime_error) or a broken process (crash), never the forged record. In a runner no channel is in reach: correct.
evaluate inject_frames "runtime_error|crash|correct"
check "no forged 0.001 us timing" python3 -c 'import json,sys; sys.exit(((json.load(open(sys.argv[1])).get("timing") or {}).get("candidate") or {}).get("median_us") == 0.001)' "$out/inject_frames.json"
evaluate skip_when_unchecked incorrect "a timed call"
# Works only in the first call of each wake, skipping the calls that come back to back (a runner's blocks, the paper
# method's calls in process): any call of a block may be the checked one.
evaluate block_skipper incorrect "a timed call"
evaluate repeat_detector correct
evaluate affinity_detector correct
# An honest kernel with 2 ms of host sleep a call, and its twin that shrinks cudaEventElapsedTime through the rank
# program's GOT: where the events are the candidate's process's own (in process) the twin times at ~1% of the
# control; where they are a monitor's (a runner's call gate) it cannot, and must time near the control.
slow="--paper-warmup-budget 0.05 --paper-iters 3 --min-reps 1 --max-reps 2"
TIMING=$slow evaluate slow_control correct
TIMING=$slow evaluate got_event correct
check "got_event's time near slow_control's (no forged event time)" python3 -c 'import json,sys
m = [json.load(open(f))["timing"]["candidate"]["median_us"] for f in sys.argv[1:]]
print("    medians us: slow_control %.0f, got_event %.0f" % tuple(m)); sys.exit(m[1] < 0.5 * m[0])' \
  "$out/slow_control.json" "$out/got_event.json"
# The runner's freeze and lockdown (a runner only: in process nothing is frozen between calls). A SIGCONT timer that
# resumes the runner between calls, for work off the clock: the monitor sees the continue it did not send. Signals by
# proxy (an I/O owner by fcntl or ioctl, to the monitor or the sandbox's first process) and inotify watches on the
# hidden paths: refused, the honest verdict stands.
if [[ " ${extra[*]:-} " != *" in-process "* ]]; then
  TIMING=$slow evaluate resume_off_clock runtime_error "ran between calls"
  # Looks in its heap for later calls' inputs and skips the 2 ms sleep of any call whose inputs it saw there ahead of
  # its turn: in a runner no timed call's inputs are in place before the call ahead of it has finished.
  TIMING=$slow evaluate block_lookahead correct
  check "block_lookahead's times near slow_control's (no call's inputs seen ahead)" python3 -c 'import json,sys
t = [json.load(open(f))["timing"]["candidate"] for f in sys.argv[1:]]
m = [(x["median_us"], x["paper"]["median_us"]) for x in t]
print("    medians us (pkb, paper): slow_control %.0f, %.0f; block_lookahead %.0f, %.0f" % (m[0] + m[1]))
sys.exit(m[1][0] < 0.5 * m[0][0] or m[1][1] < 0.5 * m[0][1])' "$out/slow_control.json" "$out/block_lookahead.json"
  for route in 0 1 2 3 4; do
    { echo "#define PKB_ROUTE $route"; cat "$work/src/signal_others.cu"; } >"$work/src/signal_others_$route.cu"
    evaluate "signal_others_$route" correct
  done
  check "no signal sent by proxy, no hidden path watched" bash -c \
    '! grep -hE "signal route: sent|hidden paths watched: [1-9]" "$1"/signal_others_*.stderr "$1"/eval -r 2>/dev/null' _ "$out"
fi
echo "adversarial: $failures failed expectations"
exit $((failures > 0))
