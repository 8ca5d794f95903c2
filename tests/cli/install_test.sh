#!/usr/bin/env bash
# `cmake --install` gives a pkb that works away from its source tree: it reads the installed share/pkb (not the
# tree it was built from), `--root` picks another tree, the installed pkb-rank starts (its libraries' run path)
# and validates a problem on CPU ranks, the installed pkb-candidate hosts a candidate, and records name the revision
# it was built from.
# Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
pkb=$prefix/bin/pkb
cd /  # nothing of the source tree around
count() { "$pkb" "$@" problems list --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))'; }
want=$(find "$src/problems" -mindepth 1 -maxdepth 1 -type d -name '[0-9][0-9][0-9]_*' | wc -l)
got=$(count)
[ "$got" = "$want" ] || { echo "installed pkb lists $got problems, the tree has $want"; exit 1; }
# Only the installed tree's problems: keep three there, and the list follows.
find "$prefix/share/pkb/problems" -mindepth 1 -maxdepth 1 -type d ! -name '00[123]_*' -exec rm -rf {} +
got=$(count)
[ "$got" = 3 ] || { echo "installed pkb lists $got problems after 3 were left in share/pkb: not the installed tree"; exit 1; }
got=$(count --root "$src")
[ "$got" = "$want" ] || { echo "pkb --root $src lists $got problems, want $want"; exit 1; }
# pkb itself (no libtorch) runs topology; pkb-full, installed beside it, the rest.
"$pkb" topology show h100_8 >/dev/null || { echo "the installed pkb cannot show a topology"; exit 1; }
"$pkb" validate 1 --small -w 2 --device cpu --python off --out "$prefix/validate" >"$prefix/validate.log" 2>&1 ||
  { cat "$prefix/validate.log"; echo "the installed pkb cannot validate problem 1"; exit 1; }
"$pkb" eval "$src/tests/fixtures/cpu/correct.cpp" --problem 1 --param M=16 --param N=8 -w 2 --device cpu \
  --warmup 1 --iters 3 --paper-warmup 1 --paper-iters 3 --min-reps 1 --max-reps 2 --out "$prefix/eval" --cache "$prefix/cache" --json >"$prefix/eval.json" 2>"$prefix/eval.log" ||
  { cat "$prefix/eval.log" "$prefix/eval.json"; echo "the installed pkb cannot evaluate a candidate"; exit 1; }
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["sandbox"]["rank_program"] == "pkb-candidate", r' \
  "$prefix/eval.json" || { echo "the installed pkb did not host the candidate in pkb-candidate"; exit 1; }
# reference.py's gate library (PKB_EAGER_GATE=1), installed where pkb looks for it, its libraries found from there.
lib=$prefix/bin/libpkb_eager_gate.so
[ -f "$lib" ] || { echo "no $lib"; exit 1; }
! ldd "$lib" | grep -q "not found" || { ldd "$lib"; echo "the installed gate library misses a library"; exit 1; }
rev=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null || true)
if [ -n "$rev" ]; then
  [ "$(cat "$prefix/share/pkb/REVISION")" = "$rev" ] || { echo "REVISION is not $rev"; exit 1; }
fi
echo "install_test: the installed pkb reads $prefix/share/pkb, --root overrides it, it validates and evaluates on CPU ranks"
