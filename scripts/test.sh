#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test (unit tests, multi-rank CPU
# validation of every problem, CLI tests). Exit status is ctest's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
cd "${PKB_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "$(nproc)" "$@"
