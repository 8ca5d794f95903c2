#!/usr/bin/env bash
# Benchmark (not a test) of the timing itself, on a GPU node: how stable each baseline's and each expert's
# median is, and how the two timing methods (pkb, paper) compare. Usage:
#   scripts/bench_timing.sh baselines [SEL=1-30] [repeats=5] [pkb validate options...]
#       validate SEL --time with --timing-repeats: every baseline (libtorch+NCCL, PyTorch eager) timed `repeats`
#       times in a row in its process; prints per problem the median of each method, the CV of the medians over
#       the repeats, the IQR, throttling, and the paper/pkb ratio.
#   scripts/bench_timing.sh experts [SEL=1-8] [repeats=5] [pkb eval options...]
#       `repeats` whole evaluations of each expert kernel (the reference pass cached after the first); prints the
#       CV of the candidate's median over the evaluations for both methods, and the paper/pkb ratio.
# Default W = 1 (-w in the options overrides). Output: $OUT (default results/bench_timing), table in table.md.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkb=${PKB:-${PKB_BUILD_DIR:-$root/build}/pkb}
mode=${1:?usage: bench_timing.sh baselines|experts [SEL] [repeats] [options]}
sel=${2:-$([ "$mode" = experts ] && echo 1-8 || echo 1-30)} repeats=${3:-5}
shift 3 2>/dev/null || shift $#
out=${OUT:-$root/results/bench_timing}
mkdir -p "$out"
case "$mode" in
  baselines)
    "$pkb" validate "$sel" -w 1 --device cuda --dtype bf16 --trials 1 --time --timing-repeats "$repeats" "$@" \
      --out "$out/validate" >"$out/validate.txt" 2>&1 || true
    ;;
  experts)
    for d in $("$pkb" problems list --json | python3 -c "
import json, sys, re
sel = sys.argv[1]
ids = set()
for part in sel.split(','):
    a, _, b = part.partition('-')
    ids.update(range(int(a), int(b or a) + 1))
for p in json.load(sys.stdin):
    if p['id'] in ids: print(p['folder'])" "$sel"); do
      [ -f "$root/problems/$d/solution.cu" ] || continue
      for i in $(seq 1 "$repeats"); do
        "$pkb" eval "$root/problems/$d/solution.cu" --problem "$d" -w 1 --json --out "$out/eval" "$@" \
          >"$out/$d.run$i.json" 2>>"$out/eval.stderr" || true
      done
    done
    ;;
  *) echo "bench_timing.sh: unknown mode '$mode' (baselines or experts)" >&2; exit 2 ;;
esac
python3 - "$mode" "$out" "$repeats" <<'PY' | tee "$out/table.md"
import glob, json, os, statistics, sys
mode, out, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])

def cv(xs):
    xs = [x for x in xs if x]
    return 100 * statistics.stdev(xs) / statistics.mean(xs) if len(xs) >= 2 and statistics.mean(xs) > 0 else None

def fmt(x, unit="", digits=1):
    return "-" if x is None else f"{x:.{digits}f}{unit}"

worst, per_timing = {}, []
if mode == "baselines":
    # device: the device view (worker/timing.h), the call's GPU time without host dispatch; "-" where the call
    # waits on the GPU inside (unheld) or on CPU ranks. device/pkb is the share of the pkb time the GPU is busy.
    print("| problem | baseline | pkb median us | IQR us | CV of median % | paper median us | CV of median % | paper/pkb | device median us | CV of median % | device/pkb | reps | throttled |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in sorted(glob.glob(f"{out}/validate/*/w1_cuda_bf16/validation.json")):
        rec = json.load(open(path))
        problem = path.split("/")[-3]
        for name, t in (rec.get("timing") or {}).items():
            if not isinstance(t, dict) or not t.get("median_us"):
                continue
            a, b = cv(t.get("repeat_medians_us", [])), cv(t.get("repeat_paper_medians_us", []))
            p = (t.get("paper") or {}).get("median_us")
            dv = (t.get("device") or {}).get("median_us")
            c = cv([x for x in t.get("repeat_device_medians_us", []) if x]) if dv else None
            for k, v in ((name + " pkb", a), (name + " paper", b), (name + " device", c)):
                if v is not None:
                    worst[k] = max(worst.get(k, 0), v)
            print(f"| {problem} | {name} | {t['median_us']:.1f} | {fmt(t.get('iqr_us'))} | {fmt(a, '', 2)} | {fmt(p)} | "
                  f"{fmt(b, '', 2)} | {fmt(p / t['median_us'] if p else None, 'x', 2)} | {fmt(dv)} | {fmt(c, '', 2)} | "
                  f"{fmt(dv / t['median_us'] if dv else None, 'x', 2)} | {t.get('reps')} | "
                  f"{'yes' if t.get('throttled') else 'no'} |")
            per_timing.append((problem, name, t.get("repeat_medians_us", []), t.get("repeat_host_probe_us", []),
                               t.get("repeat_host_chase_probe_us", [])))
    # Each timing's median beside its host-speed probes (pkb-rank's and reference.py's differ in scale; reference.py
    # has no chase probe): a median that steps with a probe points at the host's CPU, one that steps alone at the
    # GPU or the launch path. chain: the dependent multiply chain; chase: the cache-and-branch walk.
    def corr(xs, ys):
        if len(xs) == len(ys) >= 3 and statistics.pstdev(xs) > 0 and statistics.pstdev(ys) > 0:
            return statistics.correlation(xs, ys)
        return None
    print()
    print("| problem | baseline | pkb median of each timing, us | chain probe, us | corr | chase probe, us | corr |")
    print("|---|---|---|---|---|---|---|")
    for problem, name, medians, probes, chases in per_timing:
        join = lambda xs: ", ".join(f"{q:.1f}" for q in xs) or "-"
        print(f"| {problem} | {name} | {join(medians)} | {join(probes)} | {fmt(corr(medians, probes), '', 2)} | "
              f"{join(chases)} | {fmt(corr(medians, chases), '', 2)} |")
else:
    # The speedup's CV beside the median's: a speedup against baselines re-timed in the same window (retimed: how
    # many evaluations re-timed theirs, --retime-baseline) can hold steadier than either timing alone.
    # device: the candidate's device view (GPUs at W = 1; never below its host issue time), its speedup against the
    # baseline's device view, and the calls the guards set aside (busy holds, host-bound calls).
    print("| problem | evaluations | pkb median us (mean) | CV of median % | paper median us (mean) | CV of median % | paper/pkb | speedup pkb | CV of speedup % | speedup paper | device median us (mean) | CV of median % | speedup device | CV of speedup % | busy / host-bound calls | throttled | retimed | host speed ratio (drift) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    folders = sorted({os.path.basename(p).split(".run")[0] for p in glob.glob(f"{out}/*.run*.json")})
    for d in folders:
        runs = []
        for i in range(1, repeats + 1):
            try:
                runs.append(json.load(open(f"{out}/{d}.run{i}.json")))
            except (OSError, ValueError):
                pass
        ok = [r for r in runs if r.get("status") == "correct"]
        if not ok:
            print(f"| {d} | {len(runs)} | not correct: {runs[0].get('status') if runs else 'no record'} | | | | | | | | | | | | | | | |")
            if not runs and os.path.exists(f"{out}/eval.stderr"):  # say why, in the table's log
                print("  stderr: " + open(f"{out}/eval.stderr", errors="replace").read()[-600:].replace("\n", " / "))
            continue
        cand = [r["timing"]["candidate"] for r in ok]
        a = [c["median_us"] for c in cand]
        b = [c["paper"]["median_us"] for c in cand]
        speedups = lambda m: [r["timing"]["by_method"][m].get("speedup", 0) for r in ok]
        sp = lambda m: statistics.mean(speedups(m))
        retimed = sum(1 for r in ok if r["timing"].get("baseline_retimed"))
        dev = [(c.get("device") or {}).get("median_us") for c in cand]
        dev = [x for x in dev if x]
        dsp = [x for x in speedups("device") if x]
        busy = sum((c.get("device") or {}).get("busy", 0) for c in cand)
        host_bound = sum((c.get("device") or {}).get("host_bound", 0) for c in cand)
        worst["expert pkb"] = max(worst.get("expert pkb", 0), cv(a) or 0)
        worst["expert paper"] = max(worst.get("expert paper", 0), cv(b) or 0)
        if len(dev) >= 2:
            worst["expert device"] = max(worst.get("expert device", 0), cv(dev) or 0)
        print(f"| {d} | {len(ok)} | {statistics.mean(a):.1f} | {fmt(cv(a), '', 2)} | {statistics.mean(b):.1f} | "
              f"{fmt(cv(b), '', 2)} | {statistics.mean(b) / statistics.mean(a):.2f}x | {sp('pkb'):.2f}x | "
              f"{fmt(cv(speedups('pkb')), '', 2)} | {sp('paper'):.2f}x | "
              f"{fmt(statistics.mean(dev) if dev else None)} ({len(dev)}) | {fmt(cv(dev), '', 2)} | "
              f"{fmt(statistics.mean(dsp) if dsp else None, 'x', 2)} | {fmt(cv(dsp), '', 2)} | {busy} / {host_bound} | "
              f"{'yes' if any(r['timing'].get('throttled') for r in ok) else 'no'} | {retimed} | "
              f"{', '.join(fmt(r['timing'].get('host_speed_ratio'), '', 2) + ('!' if r['timing'].get('host_drift') else '') for r in ok)} |")
print()
for k, v in sorted(worst.items()):
    print(f"worst CV of the median, {k}: {v:.2f}% (target <= 2%)")
PY
