#!/usr/bin/env bash
# Evaluates every shipped expert kernel (problems/*/solution.cu) and prints the table: baselines, expert time,
# speedups and fraction of the roofline. Usage: scripts/eval_experts.sh [-w W] [extra pkb eval options]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pkb=${PKB:-${PKB_BUILD_DIR:-$root/build}/pkb}
out=${OUT:-$root/results/experts}
mkdir -p "$out"
cd "$root"
for sol in problems/*/solution.cu; do
  folder=$(basename "$(dirname "$sol")")
  "$pkb" eval "$sol" --problem "$folder" --json --out "$out/eval" "$@" >"$out/$folder.json" 2>"$out/$folder.err"
  echo "$folder: exit $? ($(python3 -c "import json,sys; print(json.load(open('$out/$folder.json')).get('status','?'))" 2>/dev/null || echo 'no record'))" >&2
done
python3 "$root/scripts/summarize_evals.py" "$out"/*.json
