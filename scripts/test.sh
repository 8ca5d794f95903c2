#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (unit tests, multi-rank CPU
# validation of every problem at its small test shapes with the reference.py cross-check in fp32, CLI tests),
# then lists the 10 slowest tests, then runs scripts/tsan.sh (the threaded code under ThreadSanitizer). Exit status:
# ctest's, or 1 if the ThreadSanitizer run failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
t0=$SECONDS
"$root/scripts/setup.sh"
# A fresh build dir gets the Test build type (-O0, no debug info: half the compile time); an existing one keeps its own.
PKB_BUILD_TYPE=${PKB_BUILD_TYPE:-Test} "$root/scripts/build.sh"
t_build=$SECONDS
cd "${PKB_BUILD_DIR:-$root/build}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
ctest --output-on-failure -j "$(nproc)" "$@" | tee "$log" || status=$?  # pipefail: ctest's status
# ctest's own result lines ("  3/301 Test  #17: name ......   Passed   12.34 sec"), slowest first.
echo "10 slowest tests:"
sed -nE 's/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: +([^ ]+) .* ([0-9]+\.[0-9]+) sec.*$/\2 \1/p' "$log" |
  sort -rn | awk 'NR <= 10 { printf "  %8.1f s  %s\n", $1, $2 }'  # awk reads it all: no SIGPIPE under pipefail
# The threaded code once more under ThreadSanitizer (its own torch-free build dir; about a minute).
t_ctest=$SECONDS
"$root/scripts/tsan.sh" || status=1
echo "test.sh: setup and build $((t_build - t0)) s, ctest $((t_ctest - t_build)) s, ThreadSanitizer $((SECONDS - t_ctest)) s"
exit "$status"
