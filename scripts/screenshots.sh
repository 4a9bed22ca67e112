#!/usr/bin/env bash
# Screenshots of each main view of shardscope-gui for the seed 004 run (matmul3.yaml: 8
# devices, layouts on non-contiguous ranks 0,4,2,6), the seed 002 run (matmul_relu.yaml) and
# the seed 001 run (lenet5_place.yaml: LeNet5 placed on 5 workers, 4 micro-batches, GPipe: the
# engine refuses 1F1B for this placement),
# under a virtual X server (xvfb-run), plus the headless renders of the same views (seed 001:
# the partitioned graph and the pipeline timeline).
#
#   scripts/screenshots.sh [OUT_DIR]     (default docs/screenshots; needs a built build/)
#   BUILD_DIR=build-debug scripts/screenshots.sh /tmp/shots
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
OUT=${1:-docs/screenshots}
DATA=${SHARDSCOPE_DATA:-../shared/datasets/mnist}
BIN="$BUILD_DIR/bin"
for tool in shardscope shardscope-gui shardscope-render; do
  [ -x "$BIN/$tool" ] || { echo "missing $BIN/$tool: cmake --build $BUILD_DIR --target $tool" >&2; exit 2; }
done
command -v xvfb-run >/dev/null || { echo "xvfb-run missing: apt-get install xvfb" >&2; exit 2; }
RUNS=$(mktemp -d)
trap 'rm -rf "$RUNS"' EXIT
export XDG_CONFIG_HOME="$RUNS/config"   # keep the temporary runs out of the recent-files list
mkdir -p "$OUT"
record() {  # record NAME MODEL
  "$BIN/shardscope" train "samples/models/$2.yaml" --devices 8 --steps 20 --limit 2048 \
    --data "$DATA" --record "$RUNS/$1.db" --log-every 1000 >/dev/null
}
record seed004 matmul3
record seed002 matmul_relu
for run in seed004 seed002; do
  # The window: graph, overview, docks (device matrix, tensor map, stepper, charts, ranks),
  # and the comparison of the two runs.
  other=$([ $run = seed004 ] && echo seed002 || echo seed004)
  xvfb-run -a -s "-screen 0 1700x1100x24" "$BIN/shardscope-gui" "$RUNS/$run.db" \
    --compare "$RUNS/$other.db" --screenshots "$OUT" --prefix "${run}_"
  # The same views headless.
  "$BIN/shardscope-render" "$RUNS/$run.db" --view graph --out "$OUT/${run}_render_graph.png"
  "$BIN/shardscope-render" "$RUNS/$run.db" --view redistribution 0 --out "$OUT/${run}_render_redistribution.png"
done
"$BIN/shardscope-render" "$RUNS/seed004.db" --view tensor matmul1 --out "$OUT/seed004_render_tensor.png"
"$BIN/shardscope-render" "$RUNS/seed004.db" --view mesh 1 --axis sp --out "$OUT/seed004_render_mesh.png"
# Seed 001: a placed pipeline run (place(worker, r) per layer).
"$BIN/shardscope" train samples/models/lenet5_place.yaml --devices 5 --micro-batches 4 \
  --schedule gpipe --steps 20 --limit 2048 --data "$DATA" --record "$RUNS/seed001.db" \
  --log-every 1000 >/dev/null
xvfb-run -a -s "-screen 0 1700x1100x24" "$BIN/shardscope-gui" "$RUNS/seed001.db" \
  --screenshots "$OUT" --prefix "seed001_"
"$BIN/shardscope-render" "$RUNS/seed001.db" --view graph --partitioned --forward-only \
  --out "$OUT/seed001_render_partitioned.png"
"$BIN/shardscope-render" "$RUNS/seed001.db" --view timeline --out "$OUT/seed001_render_timeline.png"
ls -la "$OUT"
