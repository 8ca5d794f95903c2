#!/usr/bin/env bash
# Everything pkb checks on a GPU node, as one command: build with every core, then the communicator test over
# NCCL, `pkb validate all` on the GPUs (with the reference.py cross-check), and `pkb topology detect`.
# Logs and records go to $OUT (the device tool's folder) or results/gpu_check, and after every step into
# $OUT/0-results.tar as well (the device tool brings back only a few shallow files: the archive holds every log and
# small record, however the call ends). Exit status: non-zero if any step failed.
# PKB_STEPS picks steps (default: all of comm unit validate fixtures escape retime adversarial experts bench timing
# sandbox run replay shards regress topology; also fp32: `pkb validate all` in fp32 at W = 1 and 2, IEEE fp32 checked;
# runner: GPU candidates in pkb-runner, --candidate-process runner; drawn: timing copies drawn on the device,
# --draw-copies on, with bench_eval.sh's breakdowns; baselines: both baselines of every problem through an evaluation's
# instruments; host_probe: scripts/bench_host_probe.sh's spread of the host probes between processes; runbench: `pkb
# run` of the experts at the step's W, in the
# rank program and in a runner with drawn copies, timed whole by scripts/bench_run.sh);
# PKB_VALIDATE=SELECTION (default all) picks the problems validated; PKB_VALIDATE_FP32=1 adds fp32;
# PKB_VALIDATE_TRIALS=N sets validate's trials (default 3; each trial's oracle runs in double on the CPU, minutes
# for the largest problems at full shape);
# PKB_TIME=1 also times the baselines (validate --time) and prints their roofline table; PKB_VALIDATE_WORLDS lists
# the world sizes validated (default: the step's W; on one GPU e.g. "1 2 4": W > 1 shares the GPU);
# PKB_TIMING_SELECTION (baselines, default 1-30), PKB_TIMING_EXPERTS (default 1-8) and PKB_TIMING_REPEATS
# (default 5) size the timing step, PKB_TIMING_OPTIONS (e.g. "--rep-gap-ms 50 --max-reps 10") passes timing options
# to both of its parts and PKB_TIMING_EVAL_OPTIONS (e.g. "--retime-baseline always") eval options to the experts' part. PKB_STEP_TIMEOUT=SECONDS ends any one step that runs longer (a failure), so
# one slow step cannot use up a time-limited call.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/results/gpu_check}
build=${PKB_BUILD_DIR:-/tmp/pkb-build}
mkdir -p "$out"
archive="$out/0-results.tar"
: >"$archive"
bundle() {  # every log and small record under $out into the archive, rewritten (cheap: small files only)
  (cd "$out" && find . -type f ! -name 0-results.tar -size -4M \( -name '*.log' -o -name '*.json' -o -name '*.jsonl' \
    -o -name '*.md' -o -name '*.txt' -o -name '*.csv' -o -name '*.xml' -o -name '*.stderr' -o -name '*.tar.gz' \) \
    -not -path '*/.launches/*' -not -path '*/io/*' | tar cf 0-results.tar.tmp -T - && mv 0-results.tar.tmp 0-results.tar)
}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c GPU || true)
world=${PKB_WORLD:-$gpus}
# One GPU: the multi-rank checks run with ranks sharing it (pkb starts its own MPS daemon, launch/gpus.h), and
# PKB_SHARED_EXTRA lists further world sizes for the expert kernels (e.g. "4 8").
if [ -z "${PKB_WORLD:-}" ] && [ "$gpus" = 1 ]; then world=2; fi
echo "gpus: $gpus, world: $world$([ "$world" -gt "$gpus" ] && echo ' (ranks share GPUs)')"
steps=" ${PKB_STEPS:-comm unit validate fixtures escape retime adversarial experts bench timing sandbox run replay shards regress topology} "
want() { [[ "$steps" == *" $1 "* ]]; }
status=0
step() {  # step NAME COMMAND...: runs, logs to $out/NAME.log, prints the tail, remembers failure
  local name=$1; shift
  echo "=== $name: $*"
  local t0=$SECONDS
  if [ -n "${PKB_STEP_TIMEOUT:-}" ] && [ "$name" != build ]; then
    # A shell function (exported) runs under timeout through bash.
    if declare -F "$1" >/dev/null; then set -- bash -c '"$@"' "$1" "$@"; fi
    timeout --kill-after=15 "$PKB_STEP_TIMEOUT" "$@" >"$out/$name.log" 2>&1
  else
    "$@" >"$out/$name.log" 2>&1
  fi
  local rc=$?
  [ $rc -ne 124 ] || echo "($name: stopped after PKB_STEP_TIMEOUT=$PKB_STEP_TIMEOUT s)" >>"$out/$name.log"
  tail -n "${TAIL_LINES:-25}" "$out/$name.log"
  echo "=== $name: exit $rc in $((SECONDS - t0)) s"
  bundle
  [ $rc -eq 0 ] || status=1
  return $rc
}

{ nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpus", torch.cuda.device_count())'
  nvcc --version | tail -1; mpirun --version | head -1; } >"$out/env.txt" 2>&1
cat "$out/env.txt"
"$root/scripts/setup.sh" || true
# Candidates run only inside bubblewrap. GPU images rarely have it: a copy of Debian's binary may travel with the
# checkout (.gpu/bwrap, git-ignored, made by scripts/gpu_carry.sh); without either, evaluations refuse to run and say why.
if ! command -v bwrap >/dev/null && [ -z "${PKB_BWRAP:-}" ] && [ -x "$root/.gpu/bwrap" ]; then
  export PKB_BWRAP="$root/.gpu/bwrap"
fi
echo "sandbox: ${PKB_BWRAP:-$(command -v bwrap || echo 'MISSING: no bwrap; install bubblewrap or set PKB_BWRAP')}"
targets="pkb pkb-rank pkb-candidate"
want comm && targets+=" comm_test"
want unit && targets+=" pkb_unit_tests pkb_spec_launch_tests timing_mpi_test"
{ want drawn || want drawn_checks; } && ! want unit && targets+=" timing_mpi_test"
want host_probe && targets+=" pkb_bench_host_probe"
# pkb serve needs cpp-httplib and SQLite's headers, which GPU images rarely have: Debian's may travel with the checkout
# (.gpu/serve, made by scripts/gpu_carry.sh); without either, pkb without it.
serve_flags=(-DPKB_BUILD_SERVE=ON)
if [ -d "$root/.gpu/serve/lib/pkgconfig" ] && ! { pkg-config --exists cpp-httplib && [ -f /usr/include/sqlite3.h ]; }; then
  # cpp-httplib found through the carried .pc files and loaded from .gpu/serve/lib; SQLite linked against the carried
  # copy and loaded from the image's own libsqlite3.so.0 (gpu_carry.sh says why).
  export PKG_CONFIG_PATH="$root/.gpu/serve/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$root/.gpu/serve/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  serve_flags+=(-DSQLite3_INCLUDE_DIR="$root/.gpu/serve/include" -DSQLite3_LIBRARY="$root/.gpu/serve/link/libsqlite3.so")
elif ! pkg-config --exists cpp-httplib 2>/dev/null || [ ! -f /usr/include/sqlite3.h ]; then
  serve_flags=(-DPKB_BUILD_SERVE=OFF)
  echo "pkb serve: not built (no cpp-httplib or sqlite3.h here; scripts/gpu_carry.sh makes .gpu/serve)"
fi
step build env PKB_BUILD_DIR="$build" PKB_BUILD_TARGETS="$targets" \
  "$root/scripts/build.sh" -DPKB_BUILD_TESTS=ON "${serve_flags[@]}" || exit 1
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$world" -x NCCL_NVLS_ENABLE)
if [ "$world" -gt "$gpus" ]; then  # NCCL refuses two ranks on one GPU: the staged communicator instead
  want comm && step comm_staged "${mpi[@]}" "$build/tests/comm_test" --staged
else
  want comm && step comm_nccl "${mpi[@]}" "$build/tests/comm_test" --cuda
fi
want unit && step unit "$build/tests/pkb_unit_tests"
want unit && step unit_spec_launch "$build/tests/pkb_spec_launch_tests"  # the GPU probe and nvcc compiles among them
# The timing loop's device view on the real CUDA runtime (one rank: the GPU's own queue, no sharing).
want unit && step timing_cuda mpirun --allow-run-as-root --bind-to none -np 1 "$build/tests/timing_mpi_test" --cuda
cd "$root"
selection=${PKB_VALIDATE:-all}
trials=(); [ -n "${PKB_VALIDATE_TRIALS:-}" ] && trials=(--trials "$PKB_VALIDATE_TRIALS")
validate_opts=("${trials[@]}"); [ "${PKB_TIME:-0}" = 1 ] && validate_opts+=(--time --warmup 10 --iters 50)
if want validate; then
  for vw in ${PKB_VALIDATE_WORLDS:-$world}; do
    TAIL_LINES=$((${TAIL_LINES:-25} + 40)) step "validate_cuda_w${vw}_bf16" "$build/pkb" validate "$selection" -w "$vw" \
      --device cuda --dtype bf16 "${validate_opts[@]}" --out "$out/validate"
    [ "${PKB_VALIDATE_FP32:-0}" != 1 ] || step "validate_cuda_w${vw}_fp32" "$build/pkb" validate "$selection" -w "$vw" \
      --device cuda --dtype fp32 --python off "${trials[@]}" --out "$out/validate"
  done
fi
# fp32 is IEEE fp32 in every reference and baseline (no TF32: cuDNN convolutions default to it, and 087 failed its oracle
# by 0.19 with it): every problem at W = 1 and W = 2 in fp32, reference.py cross-checked where torch imports. Not a
# default step (full shapes, ~2 x the bf16 validation): PKB_STEPS=fp32. Each launch may take PKB_FP32_TIMEOUT seconds
# (default 600): at W = 2 sharing the GPU reference.py runs on CPU (gloo), and 077's fp32 attention ran past 180 s.
# PKB_FP32_VALIDATE picks its problems apart from PKB_VALIDATE's (e.g. PKB_VALIDATE=73-87 PKB_FP32_VALIDATE=77).
if want fp32; then
  for vw in 1 2; do
    TAIL_LINES=$((${TAIL_LINES:-25} + 40)) step "fp32_validate_w$vw" "$build/pkb" validate "${PKB_FP32_VALIDATE:-$selection}" -w "$vw" \
      --device cuda --dtype fp32 --timeout "${PKB_FP32_TIMEOUT:-600}" "${trials[@]}" --out "$out/fp32_validate"
  done
fi
# Candidate evaluation on the GPUs: each CUDA fixture must land in its status. The stream-escape fixture's work
# is still running when a timed call's end event fires, so the timed calls' captured outputs are wrong: incorrect
# (and flagged by the escape probe, below).
# DEVICE: the candidate's device view must have counted calls with no busy hold (clean) or have found holds busy
# (busy: work left running outside the stream when a hold began).
expect_status() {  # expect_status PKB SRC WORLD OUTDIR STATUS [FLAG [DEVICE]]: eval SRC on problem 1, check status
  local json="$4/$(basename "$2" .cu).json"
  mkdir -p "$4"
  # shellcheck disable=SC2086  # EVAL_EXTRA: further eval options, split on spaces
  "$1" eval "$2" --problem 1 -w "$3" --trials 2 --timeout "${EVAL_TIMEOUT:-90}" --json --out "$4" ${EVAL_EXTRA:-} >"$json"
  python3 - "$json" "$5" "${6:-}" "${7:-}" <<"PY"
import json, sys
r = json.load(open(sys.argv[1]))
t = r.get("timing") or {}
c = t.get("candidate") or {}
d = c.get("device") or {}
print(r["status"], "(expected", sys.argv[2] + ")", "stream_escape", t.get("stream_escape"), "event us",
      c.get("escape_event_us"), "device us", c.get("escape_device_us"), "| device view:",
      {k: d.get(k) for k in ("median_us", "calls", "busy", "unheld", "host_bound", "max_start_spread_us",
                             "max_gap_us", "note")}, "|", (r.get("message") or "")[:300])
ok = r["status"] == sys.argv[2] and (not sys.argv[3] or str(t.get("stream_escape")).lower() == sys.argv[3])
if sys.argv[4] == "clean":
    ok = ok and d.get("busy") == 0 and d.get("median_us", 0) > 0
if sys.argv[4] == "busy":
    ok = ok and d.get("busy", 0) > 0
sys.exit(0 if ok else 1)
PY
}
export -f expect_status
if want fixtures; then
  for fx in host_crash:crash kernel_hang:timeout illegal_address:runtime_error wrong_value:incorrect; do
    EVAL_TIMEOUT=$([ "${fx%%:*}" = kernel_hang ] && echo 30 || echo 90) step "fixture_${fx%%:*}" expect_status "$build/pkb" "tests/fixtures/cuda/${fx%%:*}.cu" "$world" "$out/eval_fixtures" \
      "${fx##*:}"
  done
fi
# The escape probe's thresholds (device time > 2x event time + 100 us, worker/timing.cpp): the stream-escape
# fixture must be flagged, the expert all-reduce must not be. The probe and the device view time candidates in the
# rank program (--candidate-process in-process); in a runner the call gate's readback catches escaped work (step
# runner).
if want escape; then
  export EVAL_EXTRA="--candidate-process in-process"
  if [ "$world" != 1 ]; then
    step escape_stream_escape_flagged expect_status "$build/pkb" tests/fixtures/cuda/stream_escape.cu "$world" \
      "$out/eval_escape" incorrect true
    step escape_expert_not_flagged expect_status "$build/pkb" problems/001_allreduce/solution.cu "$world" \
      "$out/eval_escape" correct false
  fi
  # At W = 1 the device view judges candidates too: the escaped work still runs when the next hold begins (busy),
  # and the expert's holds find the GPU idle (clean).
  step escape_w1_stream_escape_busy expect_status "$build/pkb" tests/fixtures/cuda/stream_escape.cu 1 \
    "$out/eval_escape_w1" incorrect "" busy
  step escape_w1_expert_clean expect_status "$build/pkb" problems/001_allreduce/solution.cu 1 \
    "$out/eval_escape_w1" correct "" clean
  unset EVAL_EXTRA
fi
# The GPU runner (the default; docs/design/runner-and-gate.md, "The call gate"): the CUDA fixtures land in
# their statuses (host_crash at the step's W: its rank 1 crashes; the stream-escape fixture is incorrect, its side
# stream's work unfinished when the gate reads the outputs back right after the runner's done), the expert all-reduce
# is correct at W = 1 and at the step's W, and its record shows the call gate's holds and the post-window probes.
# Not in the default steps: PKB_STEPS=runner.
if want runner; then
  for fx in host_crash:crash kernel_hang:timeout illegal_address:runtime_error zeros:incorrect stream_escape:incorrect; do
    EVAL_EXTRA="--candidate-process runner" EVAL_TIMEOUT=$([ "${fx%%:*}" = kernel_hang ] && echo 30 || echo 90) \
      step "runner_fixture_${fx%%:*}" expect_status "$build/pkb" "tests/fixtures/cuda/${fx%%:*}.cu" \
      "$([ "${fx%%:*}" = host_crash ] && echo "$world" || echo 1)" "$out/eval_runner" "${fx##*:}"
  done
  for w in 1 "$world"; do
    EVAL_EXTRA="--candidate-process runner" step "runner_expert_w$w" expect_status "$build/pkb" \
      problems/001_allreduce/solution.cu "$w" "$out/eval_runner_w$w" correct
    step "runner_expert_w${w}_times" python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); t=r["timing"]; \
print({k: (t.get(k) or {}).get(m) for k in ("candidate", "baseline_libtorch_nccl") for m in ("median_us", "doorbell_us", "call_gate", "post_window_probes", "paper_blocks")}, \
r["sandbox"].get("candidate_process"), t.get("speedup"))' "$out/eval_runner_w$w/solution.json"
  done
fi
# The adversarial candidates (with the GOT twin of CUDA's event timer) in a runner, at W = 1 and at the step's W.
if want runner || want runner_adversarial; then
  for w in 1 "$world"; do
    TAIL_LINES=24 step "runner_adversarial_w$w" env PKB="$build/pkb" OUT="$out/runner_adversarial_w$w" \
      "$root/scripts/gpu_adversarial.sh" -w "$w" --candidate-process runner
  done
fi
# The runner's medians (the GPU default: the candidate in pkb-runner, timed through the call gate) against the rank
# program's (--candidate-process in-process, what pkb did before): the 8 experts at W = 1, candidate and baseline
# medians side by side, and the candidate's paper-method medians (a runner makes those calls in wakes of many calls,
# docs/design/runner-and-gate.md; issue 44 wants them within 5%) (scripts/compare_evals.py; issue 34). Not a default step:
# PKB_STEPS=runner_medians.
if want runner_medians; then
  step runner_medians_in_process env PKB="$build/pkb" OUT="$out/medians_in_process" "$root/scripts/eval_experts.sh" \
    -w 1 --candidate-process in-process
  step runner_medians_runner env PKB="$build/pkb" OUT="$out/medians_runner" "$root/scripts/eval_experts.sh" -w 1
  TAIL_LINES=16 step runner_medians_table python3 "$root/scripts/compare_evals.py" "$out/medians_in_process" \
    "$out/medians_runner" "in process" "runner (default)"
fi
# Timing copies drawn on the device (--draw-copies on, the GPUs' default; docs/design/timing-checks.md "Timing copies
# drawn where they are used"): the device's draws are the host's bytes (timing_mpi_test --cuda), the
# CUDA fixtures land in their statuses with drawn copies in a runner and in process, the experts are correct at W = 1
# with drawn copies, and scripts/bench_eval.sh prints the breakdown of expert 001 and of the zeros fixture on problem
# 13 (a GEMM + all-reduce: its harness work is a correct kernel's) with copies made on the host and drawn, in process
# and in a runner, and of expert 001 at the step's W in a runner (issue 36's figures). Not a default step:
# PKB_STEPS=drawn (or a part: drawn_checks, drawn_adversarial, drawn_experts, drawn_bench).
if want drawn || want drawn_checks; then
  want unit || step drawn_device_draws mpirun --allow-run-as-root --bind-to none -np 1 "$build/tests/timing_mpi_test" --cuda
  for mode in "--candidate-process in-process" ""; do
    # (zeros, not wrong_value: at W = 1 an all-reduce is the identity, so wrong_value's copy is right there)
    for fx in zeros:incorrect illegal_address:runtime_error; do
      EVAL_EXTRA="--draw-copies on $mode" step "drawn_fixture_${fx%%:*}${mode:+_in_process}" expect_status \
        "$build/pkb" "tests/fixtures/cuda/${fx%%:*}.cu" 1 "$out/eval_drawn${mode:+_in_process}" "${fx##*:}"
    done
  done
fi
# Candidates that are right only where they think they are checked, or that watch for the poison or repeats.
if want drawn || want drawn_checks || want drawn_adversarial; then
  TAIL_LINES=20 step drawn_adversarial env PKB="$build/pkb" OUT="$out/drawn_adversarial" \
    "$root/scripts/gpu_adversarial.sh" -w 1 --draw-copies on
fi
if want drawn || want drawn_experts; then
  step drawn_experts env PKB="$build/pkb" OUT="$out/drawn_experts" "$root/scripts/eval_experts.sh" -w 1 --draw-copies on
  step drawn_experts_correct python3 -c 'import glob, json, sys
bad = [(f, json.load(open(f)).get("status")) for f in sorted(glob.glob(sys.argv[1] + "/*.json"))]
bad = [b for b in bad if b[1] != "correct"]
print("experts not correct with drawn copies:", bad or "none"); sys.exit(1 if bad else 0)' "$out/drawn_experts"
fi
if want drawn || want drawn_bench; then
  for case in 1:problems/001_allreduce/solution.cu 13:tests/fixtures/cuda/zeros.cu; do
    # PKB_BENCH_MODES: the modes to compare, ';'-separated ("default" for no options)
    IFS=';' read -ra modes <<<"${PKB_BENCH_MODES:---draw-copies off;--draw-copies on;--candidate-process runner --draw-copies on}"
    for mode in "${modes[@]}"; do
      [ "$mode" = default ] && mode=""
      tag=$(echo "p${case%%:*} ${mode:-default}" | tr -c 'a-z0-9\n' '_')
      # shellcheck disable=SC2086  # the mode's options split on spaces
      TAIL_LINES=6 step "drawn_bench_$tag" env PKB="$build/pkb" OUT="$out/bench_$tag" "$root/scripts/bench_eval.sh" \
        "${case#*:}" "${case%%:*}" 2 -w 1 $mode
    done
  done
  TAIL_LINES=6 step "drawn_bench_p1_w${world}_runner" env PKB="$build/pkb" OUT="$out/bench_p1_w${world}_runner" \
    "$root/scripts/bench_eval.sh" problems/001_allreduce/solution.cu 1 2 -w "$world" --candidate-process runner \
    --draw-copies on
fi
# `pkb run` of the expert kernels (problems 1-8) at the step's W, compile included, timed whole with where its wall
# went (scripts/bench_run.sh): as today, and in a runner with drawn copies (issue 36: at most 60 s at W = 2 on one
# GPU). Each run starts from an empty run directory; compile and reference caches are kept between the two, so the
# second shows an evaluation's own cost. Not a default step: PKB_STEPS=runbench.
if want runbench || want runbench_default; then
  TAIL_LINES=14 step runbench_default env PKB="$build/pkb" "$root/scripts/bench_run.sh" "$out/runbench_default" \
    --model expert --problems 1-8 -w "$world"
fi
if want runbench; then
  TAIL_LINES=14 step runbench_runner_drawn env PKB="$build/pkb" "$root/scripts/bench_run.sh" \
    "$out/runbench_runner_drawn" --model expert --problems 1-8 -w "$world" --candidate-process runner --draw-copies on
fi
# Baselines timed again beside the candidate (--retime-baseline always): expert 001 at W = 1 on GPU 0, where the
# eager baseline runs too; the record must use the fresh timings and keep the cached medians.
retime_check() {  # retime_check PKB OUTDIR
  mkdir -p "$2"
  CUDA_VISIBLE_DEVICES=0 "$1" eval problems/001_allreduce/solution.cu --problem 1 -w 1 --device cuda \
    --retime-baseline always --out "$2" --json >"$2/record.json" || return 1
  python3 - "$2/record.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t, b = r["timing"], r["timing"].get("baseline_retimed", {})
eager = (t.get("baseline_pytorch_eager") or {}).get("median_us")
print(r["status"], "| fresh libtorch+NCCL", t["baseline_libtorch_nccl"]["median_us"], "eager", eager,
      "| cached", b.get("libtorch_nccl_median_us"), b.get("pytorch_eager_median_us"), "| cached probe ratio",
      b.get("host_speed_ratio"), "| speedup", t.get("speedup"), "| retime_s", r["wall"].get("retime_s"))
# (in a runner, the default, there is no eager baseline to re-time)
ok = r["status"] == "correct" and b.get("reason") == "always" and "error" not in b and \
    (eager is None or b.get("pytorch_eager_retimed"))
sys.exit(0 if ok else 1)
PY
}
export -f retime_check
want retime && step retime retime_check "$build/pkb" "$out/retime"
# Both baselines of every problem at W = 1 through the instrument an evaluation times them with (issue 44): the
# libtorch reference through the call gate (validate --time --through-gate), reference.py by its own events, one
# trial; 049 needs W >= 2, at W = 2 sharing the GPU. Not a default step: PKB_STEPS=baselines.
if want baselines; then
  TAIL_LINES=100 step baselines_gated_w1 "$build/pkb" validate "${PKB_VALIDATE:-all}" -w 1 --device cuda --time \
    --through-gate --trials 1 --out "$out/baselines"
  TAIL_LINES=12 step baselines_gated_049_w2 "$build/pkb" validate 49 -w 2 --device cuda --time --through-gate \
    --trials 1 --out "$out/baselines"
fi
# The call gate's own cost (PKB_STEPS=gate): a kernel that does almost nothing (the zeros fixture on problem 13, a
# memset of its output; PKB_GATE_SOURCE="FILE PROBLEM[;FILE PROBLEM...]" others, e.g. "problems/001_allreduce/solution.cu
# 1") in process, in process through the gate's flags on two streams of its own process (in_process_gated:
# PKB_GATE_IN_PROCESS=1, as the libtorch baseline's gated view is timed; in_process_gated_write_ops with those flags),
# and in a runner through the gate with each flag mechanism
# (runtime/call_gate.cuh: kernels; writes as stream memory operations; writes and waits as stream memory operations,
# the default); candidate and baseline medians side by side. in_process_gated against stream_memory_ops is the toll of
# crossing MPS clients alone (docs/design/runner-and-gate.md, the gate's toll). PKB_GATE_MODES picks some.
if want gate; then
  # Which processes hold a GPU context while the gate runs: under MPS only nvidia-cuda-mps-server does; a monitor or
  # runner listed by name has a context of its own (the two then take turns on the GPU).
  nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv -lms 500 >"$out/gate_compute_apps.csv" 2>&1 &
  apps_sampler=$!
  gate_modes="in_process in_process_gated kernels write_ops stream_memory_ops stream_memory_ops_hostmps"
  gate_modes+=" stream_memory_ops_unboxed"
  gate_tags=""
  IFS=';' read -ra gate_sources <<<"${PKB_GATE_SOURCE:-tests/fixtures/cuda/zeros.cu 13}"
  for gate_source in "${gate_sources[@]}"; do
    read -r gate_file gate_problem <<<"$gate_source"
    tag=p$gate_problem gate_tags+=" $tag"
    for mode in ${PKB_GATE_MODES:-$gate_modes}; do
      # in_process_gated_FLAGS: the in-process gated view with those flags (write_ops, kernels).
      flags=$(case $mode in in_process_gated_*) echo "${mode#in_process_gated_}" ;; in_process*) echo write_ops ;;
        *) echo "${mode%%_[uh][no]*}" ;; esac)
      where=$([[ "$mode" == in_process* ]] && echo in-process || echo runner)
      in_process_gate=$([[ "$mode" == in_process_gated* ]] && echo 1 || echo 0)
      # _unboxed: through the gate without bubblewrap (a trusted fixture), to see what the sandbox costs; _hostmps: the
      # host's MPS daemon rather than the sandbox's own (launch/sandbox.h own_mps).
      box=$([[ "$mode" == *_unboxed ]] && echo --no-sandbox || true)
      place=$([[ "$mode" == *_hostmps ]] && echo host || echo sandbox)
      TAIL_LINES=6 step "gate_${tag}_$mode" env PKB="$build/pkb" OUT="$out/gate_${tag}_$mode" PKB_GATE_FLAGS="$flags" \
        PKB_GATE_IN_PROCESS="$in_process_gate" PKB_MPS_LOG_DIR="$out/gate_${tag}_$mode/mps_logs" PKB_MPS_PLACE="$place" \
        "$root/scripts/bench_eval.sh" "$gate_file" "$gate_problem" 3 -w 1 --candidate-process "$where" $box
    done
  done
  kill "$apps_sampler" 2>/dev/null
  TAIL_LINES=30 step gate_table python3 - "$out" "${PKB_GATE_MODES:-$gate_modes}" "$gate_tags" <<'PY'
import glob, json, statistics, sys
print("| source | mode | candidate instrument | candidate median us (runs) | libtorch baseline median us (runs) | gate flags "
      "| hold mean wait us |")
print("|---|---|---|---|---|---|---|")
for tag, mode in [(t, m) for t in sys.argv[3].split() for m in sys.argv[2].split()]:
    runs = [json.load(open(f)) for f in sorted(glob.glob(f"{sys.argv[1]}/gate_{tag}_{mode}/run*.json"))]
    t = [r.get("timing", {}) for r in runs]
    cand = [x["candidate"]["median_us"] for x in t if (x.get("candidate") or {}).get("median_us")]
    base = [x["baseline_libtorch_nccl"]["median_us"] for x in t if (x.get("baseline_libtorch_nccl") or {}).get("median_us")]
    gate = [(x.get("candidate") or {}).get("call_gate") or {} for x in t]
    fmt = lambda v: "%.2f (%s)" % (statistics.median(v), ", ".join("%.2f" % y for y in v)) if v else "-"
    inst = (t[-1].get("instruments") or {}).get("candidate", "-") if t else "-"
    print(f"| {tag} | {mode} | {inst} | {fmt(cand)} | {fmt(base)} | {gate[-1].get('flags', '-') if gate else '-'} | "
          f"{gate[-1].get('mean_wait_us', '-') if gate else '-'} |")
PY
fi
# reference.py through the gate's flags (PKB_EAGER_GATE=1: runtime/eager_gate.cu, run_reference.py --gate-lib) beside
# its own events, on expert 001 and the zeros fixture's problem 13 (one evaluation each, a cache each), then validate's
# gated baselines of 1-8 with it: each side's median and the instrument each record names. PKB_STEPS=eager_gate.
if want eager_gate; then
  for src in "problems/001_allreduce/solution.cu 1" "tests/fixtures/cuda/zeros.cu 13"; do
    read -r gate_file gate_problem <<<"$src"
    for g in 0 1; do
      TAIL_LINES=4 step "eager_gate_p${gate_problem}_$g" env PKB="$build/pkb" OUT="$out/eager_gate_p${gate_problem}_$g" \
        PKB_EAGER_GATE=$g "$root/scripts/bench_eval.sh" "$gate_file" "$gate_problem" 1 -w 1
    done
  done
  TAIL_LINES=12 step eager_gate_validate env PKB_EAGER_GATE=1 "$build/pkb" validate 1-8 -w 1 --device cuda --time \
    --through-gate --trials 1 --out "$out/eager_gate_validate"
  TAIL_LINES=8 step eager_gate_table python3 - "$out" <<'PY'
import glob, json, sys
print("| run | candidate us (instrument) | libtorch us (instrument) | eager us (instrument, flags) |")
print("|---|---|---|---|")
for f in sorted(glob.glob(f"{sys.argv[1]}/eager_gate_p*/run1.json")):
    t = json.load(open(f)).get("timing", {})
    inst = t.get("instruments", {})
    med = lambda k: (t.get(k) or {}).get("median_us", float("nan"))
    print(f"| {f.split('/')[-2]} | {med('candidate'):.2f} ({inst.get('candidate')}) | {med('baseline_libtorch_nccl'):.2f} "
          f"({inst.get('baseline_libtorch_nccl')}) | {med('baseline_pytorch_eager'):.2f} ({inst.get('baseline_pytorch_eager')}, "
          f"{(t.get('baseline_pytorch_eager') or {}).get('gate_flags', '-')}) |")
PY
fi
want adversarial && TAIL_LINES=20 step adversarial env PKB="$build/pkb" OUT="$out/adversarial" \
  "$root/scripts/gpu_adversarial.sh" -w "$world"
want experts && step experts env PKB="$build/pkb" OUT="$out/experts" "$root/scripts/eval_experts.sh" -w "$world"
# How far apart two processes' host chase probes fall on this host, the old probe shape against today's, at the quick
# preset's 1 and 2 repetitions and the standard's 5 (host drift re-times baselines beyond 1.2x). Not a default step:
# PKB_STEPS=host_probe.
if want host_probe; then
  # Then at 5 repetitions with every process on one CPU: what is left is placement, not the core's clock.
  TAIL_LINES=16 step host_probe bash -c 'for r in 1 2 5; do PKB_BUILD_DIR="$1" "$2/scripts/bench_host_probe.sh" 16 "$r"; done
    PKB_PROBE_CPU=2 PKB_BUILD_DIR="$1" "$2/scripts/bench_host_probe.sh" 16 5' _ "$build" "$root"
fi
# pkb serve against pkb eval on the GPU (issue 46): the expert kernels of problems 1-8 at W = 1, one slot, full shapes,
# PKB_SERVE_BENCH_N submissions (default 16, in 2 rounds) and the memory with 1000 queued. Not a default step: PKB_STEPS=serve_bench.
if want serve_bench; then
  if [ "${serve_flags[0]}" = -DPKB_BUILD_SERVE=ON ]; then
    TAIL_LINES=14 step serve_bench env PKB="$build/pkb" PKB_BENCH_SET=experts "$root/scripts/bench_serve.sh" \
      "${PKB_SERVE_BENCH_N:-16}" 1 1000 2
  else
    echo "serve_bench: skipped (pkb serve not built here)"
  fi
fi
for w in ${PKB_SHARED_EXTRA:-}; do
  want experts && step "experts_w$w" env PKB="$build/pkb" OUT="$out/experts_w$w" "$root/scripts/eval_experts.sh" -w "$w"
done
want bench && step bench_eval env PKB="$build/pkb" OUT="$out/bench" "$root/scripts/bench_eval.sh" problems/001_allreduce/solution.cu 1 3 -w "$world"
# Timing stability at W = 1 (one GPU of the node): the baselines of problems 1-30 timed 5 times in a row each, and
# 5 evaluations of each expert kernel; tables of the medians' CV for both methods and the paper/pkb ratios.
# timing_baselines / timing_experts pick one part of the timing step.
if want timing || want timing_baselines; then
  TAIL_LINES=45 step timing_baselines env PKB="$build/pkb" OUT="$out/timing_baselines" CUDA_VISIBLE_DEVICES=0 \
    "$root/scripts/bench_timing.sh" baselines "${PKB_TIMING_SELECTION:-1-30}" "${PKB_TIMING_REPEATS:-5}" \
    ${PKB_TIMING_OPTIONS:-}
fi
if want timing || want timing_experts; then
  TAIL_LINES=15 step timing_experts env PKB="$build/pkb" OUT="$out/timing_experts" CUDA_VISIBLE_DEVICES=0 \
    "$root/scripts/bench_timing.sh" experts "${PKB_TIMING_EXPERTS:-1-8}" "${PKB_TIMING_REPEATS:-5}" \
    ${PKB_TIMING_OPTIONS:-} ${PKB_TIMING_EVAL_OPTIONS:-}
fi
# What the sandbox costs an honest evaluation: the same cached candidate with and without it.
if want sandbox; then
  for mode in sandbox no-sandbox; do
    flag=(); [ $mode = no-sandbox ] && flag=(--no-sandbox)
    step "bench_$mode" env PKB="$build/pkb" OUT="$out/bench_$mode" "$root/scripts/bench_eval.sh" \
      problems/001_allreduce/solution.cu 1 4 -w "$world" "${flag[@]}"
  done
fi
# pkb run as the main job (no arguments: every expert kernel on every GPU), then over a replayed mix of good, wrong,
# hanging and faulting kernels, whose counts must come out 4 samples, 1 correct.
# One archive per run: the device tool brings back only a few files per call.
copy_reports() { tar czf "$2.tar.gz" -C "$1" report.json report.html summary.md curves.csv manifest.json results.jsonl 2>/dev/null; }
if want run; then
  TAIL_LINES=40 step run_experts "$build/pkb" run
  copy_reports "results/runs/expert-w$world-cuda-bf16" "$out/run_experts"
fi
if want replay; then
  replay=$(mktemp -d)
  mkdir -p "$replay/001_allreduce"
  cp problems/001_allreduce/solution.cu "$replay/001_allreduce/sample_0.cu"
  cp tests/fixtures/cuda/wrong_value.cu "$replay/001_allreduce/sample_1.cu"
  cp tests/fixtures/cuda/kernel_hang.cu "$replay/001_allreduce/sample_2.cu"
  cp tests/fixtures/cuda/illegal_address.cu "$replay/001_allreduce/sample_3.cu"
  TAIL_LINES=30 step run_replay "$build/pkb" run --model "replay:$replay" --problems 1 --samples 4 --timeout 20 \
    --out "$out/run_replay_dir"
  copy_reports "$out/run_replay_dir" "$out/run_replay"
  # Both runs on one leaderboard (the expert run exists when the run step ran first).
  [ -d "results/runs/expert-w$world-cuda-bf16" ] && step leaderboard "$build/pkb" leaderboard \
    "results/runs/expert-w$world-cuda-bf16" "$out/run_replay_dir" -o "$out/leaderboard/leaderboard.json"
  rm -rf "$out/run_replay_dir"
fi
# The same replayed mix as two shards (pkb run --shard 0/2 and 1/2, one after the other on this node), scored
# as one run by `pkb report DIR`: expected the replay step's outcome, n = 4, c = 1, one record per sample.
if want shards; then
  replay=$(mktemp -d)
  mkdir -p "$replay/001_allreduce"
  cp problems/001_allreduce/solution.cu "$replay/001_allreduce/sample_0.cu"
  cp tests/fixtures/cuda/wrong_value.cu "$replay/001_allreduce/sample_1.cu"
  cp tests/fixtures/cuda/kernel_hang.cu "$replay/001_allreduce/sample_2.cu"
  cp tests/fixtures/cuda/illegal_address.cu "$replay/001_allreduce/sample_3.cu"
  for i in 0 1; do
    TAIL_LINES=10 step "shard_$i" "$build/pkb" run --model "replay:$replay" --problems 1 --samples 4 --timeout 20 \
      --out "$out/shards_dir" --shard "$i/2"
  done
  TAIL_LINES=30 step shards_report bash -c '"$0" report "$1" && python3 - "$1" <<"PY"
import json, sys
r = json.load(open(sys.argv[1] + "/report.json"))
p = r["problems"][0]
print("merged: n", p["n"], "c", p["c"], "failures", p["failures"], "shards", len(r["run"]["shards"]))
assert (p["n"], p["c"], r["input"]["records"]) == (4, 1, 4), "expected n = 4, c = 1, 4 records"
PY' "$build/pkb" "$out/shards_dir"
  copy_reports "$out/shards_dir" "$out/shards"
  rm -rf "$out/shards_dir"
fi
# CI regression against the expert run's report: the experts again, with problem 1's kernel swapped for a wrong
# one. Expected: exit 1, problem 1 a regression, the others pass; JUnit XML in $out.
if want regress && [ -f "results/runs/expert-w$world-cuda-bf16/report.json" ]; then
  subs=$(mktemp -d)
  for d in problems/00[1-8]_*/; do cp "$d/solution.cu" "$subs/$(basename "$d").cu"; done
  cp tests/fixtures/cuda/wrong_value.cu "$subs/001_allreduce.cu"
  TAIL_LINES=15 step regress_expect_exit_1 bash -c '"$0" regress --baseline "$1" --candidates "$2" --junit "$3"; [ $? -eq 1 ]' \
    "$build/pkb" "results/runs/expert-w$world-cuda-bf16/report.json" "$subs" "$out/junit.xml"
fi
if want topology; then
  step topology_detect "$build/pkb" topology detect --name "detected_${world}gpu" -o "$out/topology_detected.json"
  cat "$out/topology_detected.json" 2>/dev/null
fi
exit $status
