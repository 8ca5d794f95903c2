#!/usr/bin/env bash
# The shortest GPU session that proves the expert kernels: build pkb and its rank programs only, evaluate every expert,
# then the evaluation benchmark. Results: $OUT/experts.md, $OUT/bench.md and $OUT/records.tar.gz.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/results/gpu_experts}
work=/tmp/pkb-gpu-experts
build=${PKB_BUILD_DIR:-/tmp/pkb-build}
mkdir -p "$out" "$work"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
gpus=$(nvidia-smi -L | grep -c GPU)
t0=$SECONDS
PKB_BUILD_DIR="$build" PKB_BUILD_TARGETS="pkb pkb-rank pkb-candidate" "$root/scripts/build.sh" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
echo "build: $((SECONDS - t0)) s"
PKB="$build/pkb" OUT="$work/experts" "$root/scripts/eval_experts.sh" -w "$gpus" "$@" | tee "$out/experts.md"
echo "experts: $((SECONDS - t0)) s"
PKB="$build/pkb" OUT="$work/bench" "$root/scripts/bench_eval.sh" problems/001_allreduce/solution.cu 1 3 -w "$gpus" "$@" | tee "$out/bench.md"
tar czf "$out/records.tar.gz" -C "$work" experts bench 2>/dev/null
echo "total: $((SECONDS - t0)) s"
