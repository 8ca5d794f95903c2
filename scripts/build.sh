#!/usr/bin/env bash
# Configures and builds pkb into build/ with every core. Extra arguments go to cmake's configure step;
# PKB_BUILD_TARGETS limits the build to some targets; PKB_BUILD_TYPE (default RelWithDebInfo) applies when the build
# dir is configured for the first time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PKB_BUILD_DIR:-$root/build}
jobs=$(nproc)
# Ninja where it exists (setup.sh installs it), for a new build dir only (an existing one keeps its generator): it
# schedules every target's compiles as one graph and spends no time in recursive makes and dependency scans.
generator=()
[ -f "$build/CMakeCache.txt" ] || ! command -v ninja >/dev/null || generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ] || [ $# -gt 0 ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE="${PKB_BUILD_TYPE:-RelWithDebInfo}" "$@" >/dev/null
fi
targets=()
for t in ${PKB_BUILD_TARGETS:-}; do targets+=(--target "$t"); done  # e.g. "pkb pkb-rank pkb-candidate": skip the tests
cmake --build "$build" -j "$jobs" "${targets[@]}"
