#!/usr/bin/env bash
# Instructions per plan of one suite pair of bench_redistribution (issue 3), under callgrind:
# immune to the machine's noise, so changes to the planner can be compared exactly.
#
# Usage: scripts/plan_instructions.sh BIN DEVICES/AXES/INDEX [DEVICES/AXES/INDEX ...]
# BIN must run under valgrind: valgrind does not know AVX-512, so use a portable build, e.g.
#   cmake -S . -B /work/build-portable -G Ninja -DCMAKE_BUILD_TYPE=Release \
#       -DSHARDSCOPE_PORTABLE=ON -DCMAKE_CXX_FLAGS=-g
#   cmake --build /work/build-portable --target bench_redistribution
#   scripts/plan_instructions.sh /work/build-portable/bin/bench_redistribution 1024/4/50 1024/4/152
# Prints, per pair, PlanRedistribution's inclusive instruction count over the 21 plans of
# `--explain=PAIR --repeat=20`, divided by 21 (memsets count per byte: rep stosb).
set -euo pipefail
if [[ $# -lt 2 ]] || ! command -v valgrind > /dev/null; then
  sed -n '2,12p' "$0"
  command -v valgrind > /dev/null || echo "valgrind is not installed (apt-get install valgrind)"
  exit 2
fi
bin=$1
shift
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for pair in "$@"; do
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --explain="$pair" --repeat=20 \
    > /dev/null 2>&1
  count=$(callgrind_annotate --inclusive=yes "$out" 2> /dev/null |
    grep "PlanRedistribution(shardscope::Layout const&" | head -1 | awk '{gsub(",", "", $1); print $1}')
  printf "%-14s %10d\n" "$pair" "$((count / 21))"
done
