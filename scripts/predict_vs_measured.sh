#!/usr/bin/env bash
# Predicted against measured step time on the samples (issue 7), 8 in-process devices.
#
# Samples: every model file in samples/models/ that trains SPMD (files with `place:` run one
# worker per rank and are skipped, named in the output), each with its own parallel settings
# (a file without any runs data-parallel), and the GPT-style transformer (samples/cpp/gpt.cc:
# its graph is built in C++, so `sample-gpt --profile` searches with dynamic_programming and
# prints its predicted and measured step, the mean of steps 2..N of one run, median of R runs).
#
# For each model file: `shardscope plan --json` gives the predicted step time under the profile
# (the partitioned program priced: every kernel and every communication step train runs) and
# saves the strategies; `shardscope train --no-record --steps N --load-strategy` runs exactly
# those strategies, R times; the measured figure is the median over the runs of train's
# "ms/step" (the mean over the N steps of one run). Prints a Markdown table, with the
# breakdown: predicted computation (every device's kernels and optimizer update on the shared
# cores) and communication (the program's communication steps, how many per step), against what train
# measures per rank (kernel time and time in redistributions, mean over the ranks, median
# over the runs), and how busy the cores were: --cpu-runs more runs with --cpu-time (after the
# plain runs they alternate with), the ranks' thread CPU time (kernels and communication) over
# cores x that run's step, the median over those runs, with their median step beside it. Those
# runs are not in the measured figure: reading the thread CPU clock twice per instruction costs
# each device thread about 1 us per instruction, 4 us of wall time with 8 threads on 2 cores:
# the steps of the communication-bound samples, which run the most instructions per millisecond,
# measured 11-23 % longer with it, the others 5-9 % (benchmarks/README.md).
#
# Usage: scripts/predict_vs_measured.sh [--bin build/bin/shardscope] [--profile FILE]
#            [--steps 40] [--min-run-ms 400] [--runs 5] [--cpu-runs 1] [--devices 8]
#            [--gpt-steps 6] [--no-gpt] [--calibrate-each] [MODEL.yaml ...]
#   Without --profile it calibrates first (shardscope calibrate --out, in a temp dir);
#   --calibrate-each calibrates again before every sample (the load of a shared machine
#   changes within minutes; ~5 s each: calibrate spreads its rounds over 5 s).
#   --min-run-ms: a sample whose --steps would train for less than this (by its predicted
#   step) trains for more steps, so that each run lasts about that long: a run of 40 steps of
#   half a millisecond is 20 ms, within the noise of a shared machine (its median of 5 runs
#   moved by ±30 % from one script run to the next).
#   Without MODEL arguments: every samples/models/*.yaml. The GPT sample needs
#   build/bin/sample-gpt next to the shardscope binary (--no-gpt skips it).
#   Prints the load average before the table and after each sample (a loaded machine moves
#   the measurement; see benchmarks/README.md).
# Example:
#   build/bin/shardscope calibrate --out profile.json
#   scripts/predict_vs_measured.sh --profile profile.json
set -euo pipefail

bin=build/bin/shardscope
profile=""
steps=40
min_run_ms=400
runs=5
cpu_runs=1
devices=8
gpt_steps=6
gpt=1
calibrate_each=0
samples=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --min-run-ms) min_run_ms="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --cpu-runs) cpu_runs="$2"; shift 2 ;;
    --devices) devices="$2"; shift 2 ;;
    --gpt-steps) gpt_steps="$2"; shift 2 ;;
    --no-gpt) gpt=0; shift ;;
    --calibrate-each) calibrate_each=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    *) samples+=("$1"); shift ;;
  esac
done
[[ -x "$bin" ]] || { echo "no executable $bin (cmake --build build --target shardscope)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ -n "$profile" ]]; then
  calibrate_each=0
else
  profile="$tmp/profile.json"
  "$bin" calibrate --devices "$devices" --out "$profile" >&2
fi
recalibrate() {
  if [[ $calibrate_each == 1 ]]; then "$bin" calibrate --devices "$devices" --out "$profile" > /dev/null; fi
}

[[ ${#samples[@]} -gt 0 ]] || samples=(samples/models/*.yaml)
load() { cut -d' ' -f1 /proc/loadavg; }

echo "load average before: $(load)"
echo "| sample | predicted ms | measured ms (median of $runs runs) | measured / predicted | measured min–max ms | predicted computation ms | predicted communication ms (communication steps) | measured per rank: kernels ms, communication ms | cores busy | with --cpu-time: ms (/ predicted), median of $cpu_runs | load after |"
echo "|---|---:|---:|---:|---|---:|---:|---|---:|---:|---:|"
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
range() { sort -g | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f–%.2f", lo, hi}'; }
skipped=()
for model in "${samples[@]}"; do
  name=$(basename "$model" .yaml)
  # Placed models run one worker per rank, not SPMD on the searched strategies.
  if grep -q '^ *place:' "$model"; then skipped+=("$name (place: one worker per rank)"); continue; fi
  strategy="$tmp/$name.strategy.json"
  recalibrate
  read -r predicted compute collectives < <("$bin" plan "$model" --devices "$devices" \
      --profile "$profile" --save-strategy "$strategy" --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["predicted_step_seconds"]*1e3, j["predicted_compute_seconds"]*1e3, j["predicted_communication_steps"])')
  measured=() kernels=() comm=() cpu_measured=() busy=()
  sample_steps=$(awk -v s="$steps" -v m="$min_run_ms" -v p="$predicted" \
    'BEGIN {n = (p > 0) ? int(m / p + 0.999) : s; print (n > s) ? n : s}')
  train() {
    "$bin" train "$model" --devices "$devices" --profile "$profile" --load-strategy "$strategy" \
      --no-record --steps "$sample_steps" --limit 2000 "$@" 2>&1
  }
  step_ms() { grep -o '([0-9.]* ms/step)' | tr -d '()' | awk '{print $1}'; }
  for ((r = 0; r < runs || r < cpu_runs; ++r)); do
    if ((r < runs)); then
      out=$(train)
      measured+=("$(echo "$out" | step_ms)")
      # The per-rank table: "rank R  compute-ms comm-ms ..."; the mean over the ranks.
      kernels+=("$(echo "$out" | awk '$1 == "rank" {s += $3; n++} END {print s / n}')")
      comm+=("$(echo "$out" | awk '$1 == "rank" {s += $4; n++} END {print s / n}')")
    fi
    if ((r < cpu_runs)); then
      # The last two columns with --cpu-time: each rank's thread CPU time in kernels and in
      # communication; their sum over the ranks, against the cores times that run's step, is
      # how busy the cores were.
      out=$(train --cpu-time)
      cpu_measured+=("$(echo "$out" | step_ms)")
      busy+=("$(echo "$out" | awk -v ms="${cpu_measured[-1]}" -v cores="$(nproc)" \
        '$1 == "rank" {s += $(NF - 1) + $NF} END {print 100 * s / (cores * ms)}')")
    fi
  done
  cm=$(printf '%s\n' "${cpu_measured[@]}" | median)
  b=$(printf '%s\n' "${busy[@]}" | median)
  m=$(printf '%s\n' "${measured[@]}" | median)
  spread=$(printf '%s\n' "${measured[@]}" | range)
  k=$(printf '%s\n' "${kernels[@]}" | median)
  c=$(printf '%s\n' "${comm[@]}" | median)
  awk -v n="$name" -v p="$predicted" -v m="$m" -v sp="$spread" -v pc="$compute" \
      -v col="$collectives" -v k="$k" -v c="$c" -v l="$(load)" -v st="$sample_steps" \
      -v busy="$b" -v cm="$cm" \
    'BEGIN {printf "| %s (%d steps) | %.2f | %.2f | %.2f | %s | %.2f | %.2f (%.0f) | %.2f, %.2f | %.0f %% | %.2f (%.2f) | %s |\n", n, st, p, m, m / p, sp, pc, p - pc, col, k, c, busy, cm, cm / p, l}'
done

# The GPT sample: its program searches (dynamic_programming, priced with the profile), trains
# --gpt-steps steps and prints "step time: M ms measured (...), P ms predicted".
gpt_bin="$(dirname "$bin")/sample-gpt"
if [[ $gpt == 1 ]]; then
  if [[ ! -x "$gpt_bin" ]]; then
    skipped+=("gpt (no $gpt_bin: cmake --build build --target sample-gpt)")
  else
    recalibrate
    measured=() predicted=""
    for ((r = 0; r < runs; ++r)); do
      line=$("$gpt_bin" --devices "$devices" --profile "$profile" --steps "$gpt_steps" \
               --log-every 1000 2>&1 | grep '^step time:')
      measured+=("$(echo "$line" | awk '{print $3}')")
      predicted=$(echo "$line" | sed 's/.*, \([0-9.]*\) ms predicted.*/\1/')
    done
    m=$(printf '%s\n' "${measured[@]}" | median)
    spread=$(printf '%s\n' "${measured[@]}" | range)
    awk -v p="$predicted" -v m="$m" -v sp="$spread" -v l="$(load)" -v s="$gpt_steps" \
      'BEGIN {printf "| gpt (sample-gpt, steps 2–%d) | %.2f | %.2f | %.2f | %s | | | | | | %s |\n", s, p, m, m / p, sp, l}'
  fi
fi
for s in "${skipped[@]}"; do echo "skipped: $s"; done
