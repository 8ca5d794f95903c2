#!/usr/bin/env bash
# The documentation's shape, checked (scripts/test.sh runs it; no build needed):
#  - docs/architecture.md stays a map: at most 260 lines; a contents list ("## Contents", the first H2 section, one
#    link per other H2 section); every other H2 section names at least one file of the tree (a path under harness/,
#    scripts/, tests/, problems/, scoring/ or prompts/), since each mechanism's section says where it lives;
#  - every relative markdown link in docs/ (and README.md) points at a file or directory that exists (anchors are
#    not checked; links inside fenced code blocks and inline code are not links).
# Exit status: 0 all held, 1 otherwise (each failure listed).
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
fail() { echo "check_docs.sh: $*"; status=1; }

arch=docs/architecture.md
max_lines=260
lines=$(wc -l <"$arch")
[ "$lines" -le "$max_lines" ] || fail "$arch has $lines lines (at most $max_lines: move detail to docs/design/)"

# The contents list: the first H2 is "## Contents", holding one list item linking to each other H2 section.
first_h2=$(grep -m1 '^## ' "$arch" || true)
listed=$(awk '/^## /{inside = ($0 == "## Contents")} inside && /^ *([-*]|[0-9]+\.) \[[^]]*\]\(#[^)]+\)/' "$arch" | wc -l)
sections=$(grep -c '^## ' "$arch" || true)
if [ "$first_h2" != "## Contents" ] || [ "$listed" -eq 0 ]; then
  fail "$arch has no contents list at the top (a first section '## Contents' of links to its sections)"
elif [ "$listed" -ne $((sections - 1)) ]; then
  fail "$arch: the contents list has $listed entries for $((sections - 1)) sections"
fi

# Every H2 section other than the contents names a file (fenced code blocks count: diagrams name files too).
unnamed=$(awk '
  function close_section() { if (title != "" && title != "Contents" && !named) print title }
  /^## / { close_section(); title = substr($0, 4); named = 0; next }
  /(^|[^[:alnum:]_.\/-])(harness|scripts|tests|problems|scoring|prompts)\/[[:alnum:]_.*{]/ { named = 1 }
  END { close_section() }
' "$arch")
while IFS= read -r title; do
  [ -n "$title" ] && fail "$arch: section \"$title\" names no file (harness/..., scripts/..., tests/..., ...)"
done <<<"$unnamed"

# Relative links: [text](target) outside fenced code blocks and inline code, in docs/**/*.md and README.md. URLs,
# mailto: and same-page anchors are skipped; a target's #anchor is dropped and the rest must exist.
links=0
while IFS= read -r -d '' md; do
  dir=$(dirname "$md")
  while IFS=$'\t' read -r lineno target; do
    links=$((links + 1))
    path=${target%%#*}
    [ -e "$dir/$path" ] || fail "$md:$lineno: link to $target: no such file"
  done < <(awk '
    /^[[:space:]]*```/ { fenced = !fenced; next }
    fenced { next }
    {
      line = $0
      gsub(/`[^`]*`/, "", line)
      while (match(line, /\]\([^)[:space:]]+[)[:space:]]/)) {
        target = substr(line, RSTART + 2, RLENGTH - 3)
        line = substr(line, RSTART + RLENGTH)
        if (target ~ /^(https?:|mailto:|#)/ || target == "") continue
        printf "%d\t%s\n", NR, target
      }
    }' "$md")
done < <(find docs -name '*.md' -print0 | sort -z; printf '%s\0' README.md)

if [ "$status" -eq 0 ]; then
  echo "check_docs.sh: $arch $lines lines, $listed sections listed, each naming its files; $links relative links resolve"
fi
exit "$status"
