#!/usr/bin/env bash
# Planning time per class (issue 3) of one or more bench_redistribution binaries, alternated:
# each binary's CPU median per (devices, axes) class in every run, and the least over the
# runs (this shared 2-core machine moves by up to 1.5x between runs seconds apart, so the
# least-disturbed run of each binary is compared).
#
# Usage: scripts/bench_redistribution_classes.sh RUNS BIN [BIN ...]
# Example (before/after):
#   cp build/bin/bench_redistribution /tmp/bench_base     # at the base commit
#   scripts/bench_redistribution_classes.sh 3 /tmp/bench_base build/bin/bench_redistribution
# Takes a shared lock (flock -x /tmp/quiet.lock) per run, so builds that take it shared
# (flock -s) do not run during a measurement.
set -euo pipefail
if [[ $# -lt 2 ]]; then
  sed -n '2,12p' "$0"
  exit 2
fi
runs=$1
shift
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for i in $(seq "$runs"); do
  for bin in "$@"; do
    flock -x /tmp/quiet.lock "$bin" --bytes=0 --slowest=0 2>&1 |
      awk -v bin="$bin" '/^ devices  axes  pairs/ {table = 1; next}
                         table && $1 ~ /^[0-9]+$/ {print bin, $1 "/" $2, $8}
                         table && $1 == "all" {table = 0}' >> "$raw"
  done
done
printf "%-40s %-8s %8s   %s\n" binary class least "every run (CPU median, us)"
awk '{key = $1 " " $2; if (!(key in least) || $3 < least[key]) least[key] = $3;
      runs[key] = runs[key] " " $3; if (!(key in order)) {order[key] = n++; keys[n - 1] = key}}
     END {for (i = 0; i < n; ++i) {split(keys[i], k, " ");
          printf "%-40s %-8s %8s  %s\n", k[1], k[2], least[keys[i]], runs[keys[i]]}}' "$raw"
