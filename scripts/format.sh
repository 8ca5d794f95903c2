#!/usr/bin/env bash
# The C++/CUDA sources in .clang-format's style (Debian 12's clang-format 14; another version may disagree on
# details). `scripts/format.sh` checks and lists the files that differ (exit 1); `scripts/format.sh --fix`
# rewrites them. Test fixtures are left as written: they are data (candidates as a model or an attacker wrote them).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "format.sh: clang-format is not installed (scripts/setup.sh installs it): format not checked" >&2
  exit 0
fi
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | grep -v '^tests/fixtures/')
if [ "${1:-}" = --fix ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 16 clang-format -i
  exit 0
fi
# Batches of files per clang-format process (one process per file spent ~20 s of a CI run starting 379 of them);
# each file that differs is named in its "path:line:col: error: code should be clang-formatted" lines.
report=$(printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 48 clang-format --dry-run -Werror 2>&1) && rc=0 || rc=$?
differ=$(printf '%s\n' "$report" | grep -oE '^[^ :]+:[0-9]+:[0-9]+: error' | cut -d: -f1 | sort -u || true)
if [ "$rc" -ne 0 ] && [ -z "$differ" ]; then
  echo "format.sh: clang-format failed without naming a file:"; printf '%s\n' "$report" | tail -n 20
  exit 1
fi
if [ -n "$differ" ]; then
  echo "format.sh: $(echo "$differ" | wc -l) files differ from .clang-format (scripts/format.sh --fix rewrites them):"
  echo "$differ" | sed 's/^/  /'
  exit 1
fi
echo "format.sh: ${#files[@]} files as .clang-format says"
