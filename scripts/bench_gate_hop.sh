#!/usr/bin/env bash
# Benchmark (not a test): what a flag hand-over between a monitor's and a runner's CUDA stream costs, by where the
# flags live and how they are written and waited for (scripts/gate_hop_bench.cu), in one process and in two processes
# under an MPS daemon of its own (as pkb's ranks share a GPU). Needs a GPU. Usage: scripts/bench_gate_hop.sh [OUT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/results/gate_hop}
mkdir -p "$out"
nvcc -std=c++17 -O2 -arch=native -o "$out/gate_hop_bench" "$root/scripts/gate_hop_bench.cu" -lcuda
echo "one process (two streams):"
printf '| where | flags | median us | p90 us |\n|---|---|---|---|\n'
"$out/gate_hop_bench" one
echo "two processes, no MPS (two contexts):"
timeout 60 "$out/gate_hop_bench" two || echo "(no result in 60 s)"
export CUDA_MPS_PIPE_DIRECTORY="$out/mps/pipe" CUDA_MPS_LOG_DIRECTORY="$out/mps/log"
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d
trap 'echo quit | nvidia-cuda-mps-control' EXIT
echo "two processes under MPS:"
timeout 60 "$out/gate_hop_bench" two
