#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs the benchmark (`pkb run`: with no arguments, the expert
# kernels of every problem that has one, on every local GPU; arguments are passed to `pkb run`). Without a GPU it
# says so, compiles the kernels, validates the references on CPU ranks and writes a report marking the GPU
# evaluations as skipped.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "$root"
exec "${PKB_BUILD_DIR:-$root/build}/pkb" run "$@"
