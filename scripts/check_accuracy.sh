#!/usr/bin/env bash
# check_accuracy.sh MIN -- COMMAND...: runs a `shardscope train` command and fails unless its
# "test accuracy:" line reports at least MIN. Used by CTest's accuracy tests.
set -uo pipefail
min="$1"; shift
[[ "$1" == "--" ]] && shift
out=$("$@" 2>&1); code=$?
echo "$out" | grep -v "ETA" | tail -5
[[ $code -eq 0 ]] || { echo "FAIL: exit code $code"; exit 1; }
acc=$(echo "$out" | sed -n 's/^test accuracy: \([0-9.]*\).*/\1/p' | tail -1)
[[ -n "$acc" ]] || { echo "FAIL: no accuracy line"; exit 1; }
if awk -v a="$acc" -v m="$min" 'BEGIN { exit !(a >= m) }'; then
  echo "PASS: accuracy $acc >= $min"
else
  echo "FAIL: accuracy $acc < $min"; exit 1
fi
