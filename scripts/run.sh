#!/usr/bin/env bash
# The main job: installs what is missing, builds, and validates every problem's reference against its oracle
# (on the GPUs with NCCL and the reference.py cross-check where GPUs exist, on the CPU under MPI otherwise).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
pkb="${PKB_BUILD_DIR:-$root/build}/pkb"
cd "$root"
if command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; then
  gpus=$(nvidia-smi -L | grep -c GPU)
  "$pkb" validate all -w "$gpus" --device cuda "$@"
else
  echo "run: no GPU on this machine: validating references on the CPU (MPI ranks) at W=2 and W=4"
  "$pkb" validate all -w 2 --device cpu "$@"
  "$pkb" validate all -w 4 --device cpu "$@"
fi
