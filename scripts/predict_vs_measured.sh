#!/usr/bin/env bash
# Predicted against measured step time on the samples (issue 7), 8 in-process devices.
#
# For each sample: `shardscope plan --json` gives the predicted step time under the profile
# and saves the strategies; `shardscope train --no-record --steps N --load-strategy` runs
# exactly those strategies, R times; the measured figure is the median over the runs of
# train's "ms/step" (the mean over the N steps of one run). Prints a Markdown table, with the
# breakdown: predicted computation (every device's kernels and optimizer update on the shared
# cores) and communication (collectives and exchanges, how many per step), against what train
# measures per rank (kernel time and time in redistributions, mean over the ranks, median
# over the runs).
#
# Usage: scripts/predict_vs_measured.sh [--bin build/bin/shardscope] [--profile FILE]
#            [--steps 40] [--runs 5] [--devices 8]
#   Without --profile it calibrates first (shardscope calibrate --out, in a temp dir).
# Example:
#   build/bin/shardscope calibrate --out profile.json
#   scripts/predict_vs_measured.sh --profile profile.json
set -euo pipefail

bin=build/bin/shardscope
profile=""
steps=40
runs=5
devices=8
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --devices) devices="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$bin" ]] || { echo "no executable $bin (cmake --build build --target shardscope)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -z "$profile" ]]; then
  profile="$tmp/profile.json"
  "$bin" calibrate --devices "$devices" --out "$profile" >&2
fi

# Samples: the seed 003 programs with their own parallel settings; LeNet-5 data-parallel
# (its model file has no parallel section: every operator splits the batch).
samples=(samples/models/ffn.yaml samples/models/network3.yaml samples/models/matmul_relu.yaml
         samples/models/lenet5.yaml)

echo "| sample | predicted ms | measured ms (median of $runs runs × $steps steps) | measured / predicted | predicted computation ms | predicted communication ms (collectives) | measured per rank: kernels ms, communication ms |"
echo "|---|---:|---:|---:|---:|---:|---|"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for model in "${samples[@]}"; do
  name=$(basename "$model" .yaml)
  strategy="$tmp/$name.strategy.json"
  read -r predicted compute collectives < <("$bin" plan "$model" --devices "$devices" \
      --profile "$profile" --save-strategy "$strategy" --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["predicted_step_seconds"]*1e3, j["predicted_compute_seconds"]*1e3, j["predicted_collectives"])')
  measured=() kernels=() comm=()
  for ((r = 0; r < runs; ++r)); do
    out=$("$bin" train "$model" --devices "$devices" --profile "$profile" \
            --load-strategy "$strategy" --no-record --steps "$steps" --limit 2000 2>&1)
    measured+=("$(echo "$out" | grep -o '([0-9.]* ms/step)' | tr -d '()' | awk '{print $1}')")
    # The per-rank table: "rank R  compute-ms comm-ms ..."; the mean over the ranks.
    kernels+=("$(echo "$out" | awk '$1 == "rank" {s += $3; n++} END {print s / n}')")
    comm+=("$(echo "$out" | awk '$1 == "rank" {s += $4; n++} END {print s / n}')")
  done
  m=$(printf '%s\n' "${measured[@]}" | median)
  k=$(printf '%s\n' "${kernels[@]}" | median)
  c=$(printf '%s\n' "${comm[@]}" | median)
  awk -v n="$name" -v p="$predicted" -v m="$m" -v pc="$compute" -v col="$collectives" \
      -v k="$k" -v c="$c" \
    'BEGIN {printf "| %s | %.2f | %.2f | %.2f | %.2f | %.2f (%.0f) | %.2f, %.2f |\n", n, p, m, m / p, pc, p - pc, col, k, c}'
done
