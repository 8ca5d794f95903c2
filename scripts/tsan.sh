#!/usr/bin/env bash
# The code pkb runs from several threads (pkb_core_tests: tests/unit/concurrency_test.cpp, files_test.cpp,
# seal_test.cpp; the models' dispatch, retries and cache over loopback HTTP; pkb serve's store and slots in one
# process, pkb_serve_unit_tests) built with ThreadSanitizer and run:
# any data race fails it. A build dir of its own (default build-tsan beside the main one), torch-free targets
# only, so it costs about a minute on two cores.
# scripts/test.sh builds it beside ctest (PKB_TSAN_BUILD_ONLY=1: build, no run) and runs it after. Exit status:
# non-zero on a build failure, a failed test or a race.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PKB_TSAN_BUILD_DIR:-${PKB_BUILD_DIR:-$root/build}-tsan}
if [ ! -f "$build/CMakeCache.txt" ]; then
  # clang where it can link a ThreadSanitizer program (scripts/setup.sh installs it): this tree has no libtorch, whose
  # 1.13 headers clang 14 cannot compile as C++20, and clang compiles it in 52 s of CPU where g++ took 90 s.
  compilers=()
  if [ -z "${CXX:-}" ] && command -v clang++ >/dev/null &&
    echo 'int main() {}' | clang++ -fsanitize=thread -x c++ - -o /dev/null 2>/dev/null; then
    compilers=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
  fi
  generator=()
  ! command -v ninja >/dev/null || generator=(-G Ninja)  # as scripts/build.sh
  cmake -S "$root" -B "$build" "${generator[@]}" "${compilers[@]}" -DCMAKE_BUILD_TYPE=Test -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
else
  cmake "$build" >/dev/null  # a target added since it was configured: make names only the targets it knows
fi
cmake --build "$build" -j "$(nproc)" --target pkb_core_tests pkb_models_http_tests pkb_serve_unit_tests >"$build/tsan-build.log" 2>&1 ||
  { tail -n 40 "$build/tsan-build.log"; exit 1; }
[ -z "${PKB_TSAN_BUILD_ONLY:-}" ] || exit 0  # scripts/test.sh builds it beside ctest, then runs it
# halt_on_error: the first race ends the run with its report; die_after_fork=0: pkb forks (then execs at once)
# from threaded code, which TSan otherwise refuses.
export TSAN_OPTIONS="halt_on_error=1 die_after_fork=0 second_deadlock_stack=1 ${TSAN_OPTIONS:-}"
# Each binary in gtest shards side by side: the HTTP tests mostly wait (deadlines, back-offs: ~15 s of wall for ~1 s
# of CPU in one process), so shards cost little CPU and end the phase sooner.
status=0
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=() names=()
for spec in tests/pkb_core_tests:2 tests/models/pkb_models_http_tests:4 tests/pkb_serve_unit_tests:1; do
  t=${spec%:*} shards=${spec##*:}
  for ((i = 0; i < shards; i++)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i "$build/$t" --gtest_brief=1 >"$logs/${#pids[@]}.log" 2>&1 &
    pids+=($!) names+=("$t (shard $((i + 1)) of $shards)")
  done
done
for k in "${!pids[@]}"; do
  echo "=== tsan: ${names[$k]}"
  wait "${pids[$k]}" || status=1
  cat "$logs/$k.log"
done
exit $status
