#!/usr/bin/env bash
# check_accuracy_match.sh MIN DELTA -- REFERENCE... -- COMMAND...: runs two `shardscope train`
# commands (a reference, e.g. single device, and the run under test) and fails unless both
# "test accuracy:" lines reach MIN and differ by at most DELTA. Used by CTest's accuracy tests.
set -uo pipefail
min="$1"; delta="$2"; shift 2
[[ "$1" == "--" ]] && shift
ref=()
while [[ $# -gt 0 && "$1" != "--" ]]; do ref+=("$1"); shift; done
shift
accuracy() {
  local out code
  out=$("$@" 2>&1); code=$?
  echo "$out" | grep -v "ETA" | tail -3 >&2
  [[ $code -eq 0 ]] || { echo "FAIL: exit code $code: $*" >&2; return 1; }
  echo "$out" | sed -n 's/^test accuracy: \([0-9.]*\).*/\1/p' | tail -1
}
a=$(accuracy "${ref[@]}") || exit 1
b=$(accuracy "$@") || exit 1
[[ -n "$a" && -n "$b" ]] || { echo "FAIL: no accuracy line"; exit 1; }
if awk -v a="$a" -v b="$b" -v m="$min" -v d="$delta" \
     'BEGIN { x = a - b; if (x < 0) x = -x; exit !(a >= m && b >= m && x <= d) }'; then
  echo "PASS: accuracy $b (reference $a) >= $min, difference <= $delta"
else
  echo "FAIL: accuracy $b, reference $a (need >= $min each, difference <= $delta)"; exit 1
fi
