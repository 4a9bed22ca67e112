#!/usr/bin/env bash
# Records the real runs issue 21's viewer targets name and benchmarks the window on them
# (benchmarks/bench_gui.cc; the viewer library alone: bench_viewer's BM_OpenLargeRunViews):
#   gpt136-1024  a Megatron GPT of 136 layers (scripts/megatron_gpt.py: hidden 1024, 16
#                heads, tensor-parallel 8 x data-parallel 128; > 10,000 operators) planned
#                for 1024 devices of dgx-h100
#   llama-1024   the 32-layer Llama-style decoder (samples/onnx/llama.onnx) planned for 1024
#                devices of dgx-h100 (recursive_programming)
#   gpt136-4096  the same GPT, data-parallel 512, for 4096 devices
# Targets: the graph painted < 1 s after opening, a folded layer expanded < 200 ms, a
# stepper frame < 16 ms, a 4096-device run open in < 2 s with < 500 MB.
#
#   scripts/bench_viewer_runs.sh [RUN_DIR]       (default: a temporary directory, removed)
#   REPETITIONS=5 BUILD_DIR=build scripts/bench_viewer_runs.sh runs/bench
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
REPETITIONS=${REPETITIONS:-3}
BIN="$BUILD_DIR/bin"
for tool in shardscope bench_gui bench_viewer; do
  [ -x "$BIN/$tool" ] || { echo "missing $BIN/$tool: cmake --build $BUILD_DIR --target $tool" >&2; exit 2; }
done
if [ $# -ge 1 ]; then
  RUNS=$1
  mkdir -p "$RUNS"
else
  RUNS=$(mktemp -d)
  trap 'rm -rf "$RUNS"' EXIT
fi
export XDG_CONFIG_HOME="$RUNS/config"  # keep these runs out of the recent-files list
export QT_QPA_PLATFORM=offscreen

record() {  # record NAME MODEL PLAN-ARGS...: plan and write NAME.db (kept when it exists)
  local name=$1 model=$2
  shift 2
  [ -s "$RUNS/$name.db" ] && return
  "$BIN/shardscope" plan "$model" --cluster dgx-h100 --record "$RUNS/$name.db" "$@" >"$RUNS/$name.plan.txt"
  echo "recorded $RUNS/$name.db ($(du -h "$RUNS/$name.db" | cut -f1))"
}
python3 scripts/megatron_gpt.py --layers 136 --hidden 1024 --heads 16 --tp 8 --dp 128 >"$RUNS/gpt136-1024.yaml"
python3 scripts/megatron_gpt.py --layers 136 --hidden 1024 --heads 16 --tp 8 --dp 512 >"$RUNS/gpt136-4096.yaml"
record gpt136-1024 "$RUNS/gpt136-1024.yaml" --devices 1024
record llama-1024 samples/onnx/llama.onnx --devices 1024 --batch 1024 --search recursive_programming
record gpt136-4096 "$RUNS/gpt136-4096.yaml" --devices 4096

bench() {  # bench RUN FILTER: one process per benchmark, so peak memory is its own
  SHARDSCOPE_BENCH_RUN="$RUNS/$1.db" "$2" --benchmark_filter="$3" \
    --benchmark_repetitions="$REPETITIONS" --benchmark_report_aggregates_only=true 2>&1 |
    grep -E '^BM_.*_median' || true
}
for run in gpt136-1024 llama-1024 gpt136-4096; do
  echo "== $run ($(grep -m1 -o '[0-9]* devices' "$RUNS/$run.plan.txt"))"
  for b in BM_WindowOpenRun BM_ExpandLayer BM_StepperFrame; do bench "$run" "$BIN/bench_gui" "$b"; done
  bench "$run" "$BIN/bench_viewer" BM_OpenLargeRunViews
done
