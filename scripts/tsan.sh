#!/usr/bin/env bash
# The code pkb runs from several threads (pkb_core_tests: tests/unit/concurrency_test.cpp, files_test.cpp,
# seal_test.cpp; the models' dispatch, retries and cache over loopback HTTP) built with ThreadSanitizer and run:
# any data race fails it. A build dir of its own (default build-tsan beside the main one), torch-free targets
# only, so it costs about a minute on two cores.
# scripts/test.sh builds it beside ctest (PKB_TSAN_BUILD_ONLY=1: build, no run) and runs it after. Exit status:
# non-zero on a build failure, a failed test or a race.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PKB_TSAN_BUILD_DIR:-${PKB_BUILD_DIR:-$root/build}-tsan}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Test -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
else
  cmake "$build" >/dev/null  # a target added since it was configured: make names only the targets it knows
fi
cmake --build "$build" -j "$(nproc)" --target pkb_core_tests pkb_models_http_tests >"$build/tsan-build.log" 2>&1 ||
  { tail -n 40 "$build/tsan-build.log"; exit 1; }
[ -z "${PKB_TSAN_BUILD_ONLY:-}" ] || exit 0  # scripts/test.sh builds it beside ctest, then runs it
# halt_on_error: the first race ends the run with its report; die_after_fork=0: pkb forks (then execs at once)
# from threaded code, which TSan otherwise refuses.
export TSAN_OPTIONS="halt_on_error=1 die_after_fork=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
status=0
for t in tests/pkb_core_tests tests/models/pkb_models_http_tests; do
  echo "=== tsan: $t"
  "$build/$t" --gtest_brief=1 || status=1
done
exit $status
