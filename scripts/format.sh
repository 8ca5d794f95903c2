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
differ=$(printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 16 sh -c '
  for f; do clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"; done' sh | sort)
if [ -n "$differ" ]; then
  echo "format.sh: $(echo "$differ" | wc -l) files differ from .clang-format (scripts/format.sh --fix rewrites them):"
  echo "$differ" | sed 's/^/  /'
  exit 1
fi
echo "format.sh: ${#files[@]} files as .clang-format says"
