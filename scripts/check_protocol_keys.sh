#!/usr/bin/env bash
# Every key that crosses a process boundary is spelled once, in harness/src/protocol/ (issue 45): rank records
# (protocol/rank_record.h), the plan and batch files (rank_plan.h) and the runner's layout (runner_layout.h) are read
# there, strictly, into typed structs. The files that write or read them hold no `.value("KEY", default)`, the reader
# that turns a misspelt or mistyped key into a silent default, and read no rank record file as raw JSON. A line there
# that reads other JSON (the driver's own, never a message between processes) says so with the words "not a rank
# record" on it or on the line above. scripts/test.sh runs this check; no build needed.
# Exit status: 0 none found, 1 otherwise (each listed).
set -euo pipefail
cd "$(dirname "$0")/.."
# The writers (the rank programs, the runner) and the readers (the driver's eval and validate stages).
files=(harness/src/eval/evaluate.cpp harness/src/eval/reference.cpp harness/src/validate/validate.cpp
  harness/src/worker/*.cpp harness/src/worker/*.h)
found=$(awk '
  FNR == 1 { prev = "" }
  /\.value\("/ && index($0, "not a rank record") == 0 && index(prev, "not a rank record") == 0 {
    printf "  %s:%d: .value(\"...\"): %s\n", FILENAME, FNR, $0
  }
  /(read_json_or_null|json::parse|ifstream)[^;]*"rank[0-9]*\.json"/ {
    printf "  %s:%d: a rank record file read as raw JSON: %s\n", FILENAME, FNR, $0
  }
  { prev = $0 }
' "${files[@]}")
if [ -n "$found" ]; then
  echo "check_protocol_keys.sh: keys of rank records, plans or layouts read outside harness/src/protocol/ (read them"
  echo "through its typed structs; a line reading the driver's own JSON says \"not a rank record\"):"
  echo "$found"
  exit 1
fi
echo "check_protocol_keys.sh: ${#files[@]} files read rank records, plans and layouts through harness/src/protocol/ only"
