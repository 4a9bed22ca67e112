#!/usr/bin/env bash
# Screenshots of each main view of shardscope-gui at 1920x1080 (graph, overview, device
# matrix, tensor map, redistribution stepper, charts, ranks, timeline, rank, compare) for:
#   seed004   the seed 004 run (matmul3.yaml: 8 devices, layouts on non-contiguous ranks
#             0,4,2,6), compared with the seed 002 run (matmul_relu.yaml)
#   gpt1024   GPT-2 (samples/onnx/gpt2.onnx) planned for 1024 devices (plan only: no charts)
#   seed001   the placed run (lenet5_place.yaml: LeNet5 on 5 workers, 4 micro-batches, GPipe)
# under a virtual X server (xvfb-run; QT_QPA_PLATFORM=offscreen without it), plus headless
# renders (shardscope render, 1 pixel per point) of the mesh and a redistribution frame of
# each. A window PNG above 300 KB is saved with 256 colours (shardscope-gui --screenshots).
#
#   scripts/screenshots.sh [OUT_DIR]     (default docs/img; needs a built build/)
#   BUILD_DIR=build-debug scripts/screenshots.sh /tmp/shots
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
OUT=${1:-docs/img}
DATA=${SHARDSCOPE_DATA:-../shared/datasets/mnist}
BIN="$BUILD_DIR/bin"
command -v jq >/dev/null || { echo "needs jq (apt-get install jq)" >&2; exit 2; }
for tool in shardscope shardscope-gui shardscope-render; do
  [ -x "$BIN/$tool" ] || { echo "missing $BIN/$tool: cmake --build $BUILD_DIR --target $tool" >&2; exit 2; }
done
RUNS=$(mktemp -d)
trap 'rm -rf "$RUNS"' EXIT
export XDG_CONFIG_HOME="$RUNS/config"   # keep the temporary runs out of the recent-files list
mkdir -p "$OUT"
gui() {  # gui RUN PREFIX [ARGS...]: every main view of the window at 1920x1080
  local run=$1 prefix=$2
  shift 2
  if command -v xvfb-run >/dev/null; then
    xvfb-run -a -s "-screen 0 1920x1080x24" "$BIN/shardscope-gui" "$run" "$@" \
      --screenshots "$OUT" --prefix "$prefix"
  else
    QT_QPA_PLATFORM=offscreen "$BIN/shardscope-gui" "$run" "$@" --screenshots "$OUT" --prefix "$prefix"
  fi
}
render() { "$BIN/shardscope-render" "$@" --scale 0.8 >/dev/null; }
record() {  # record NAME MODEL
  "$BIN/shardscope" train "samples/models/$2.yaml" --devices 8 --steps 20 --limit 2048 \
    --data "$DATA" --record "$RUNS/$1.db" --log-every 1000 >/dev/null
}
record seed004 matmul3
record seed002 matmul_relu
gui "$RUNS/seed004.db" seed004_ --compare "$RUNS/seed002.db"
render "$RUNS/seed004.db" --view mesh 1 --axis sp --out "$OUT/seed004_render_mesh.png"
render "$RUNS/seed004.db" --view redistribution 0 --out "$OUT/seed004_render_redistribution.png"
render "$RUNS/seed004.db" --view timeline --rank 3 --out "$OUT/seed004_render_rank_timeline.png"
# GPT-2 planned for 1024 devices: heat-map meshes, frames with one group drawn in full.
"$BIN/shardscope" plan samples/onnx/gpt2.onnx --devices 1024 --batch 1024 \
  --search recursive_programming --record "$RUNS/gpt1024.db" >/dev/null
gui "$RUNS/gpt1024.db" gpt1024_
# The planner names the mesh's axes: outline the groups along mesh 1's first one.
axis=$("$BIN/shardscope" inspect "$RUNS/gpt1024.db" --json |
  jq -r '.meshes[] | select(.id == 1) | .axis_names[0]')
render "$RUNS/gpt1024.db" --view mesh 1 --axis "$axis" --out "$OUT/gpt1024_render_mesh.png"
render "$RUNS/gpt1024.db" --view redistribution 1 --out "$OUT/gpt1024_render_redistribution.png"
# Seed 001: a placed pipeline run (place(worker, r) per layer).
"$BIN/shardscope" train samples/models/lenet5_place.yaml --devices 5 --micro-batches 4 \
  --schedule gpipe --steps 20 --limit 2048 --data "$DATA" --record "$RUNS/seed001.db" \
  --log-every 1000 >/dev/null
gui "$RUNS/seed001.db" seed001_
render "$RUNS/seed001.db" --view timeline --out "$OUT/seed001_render_timeline.png"
# A Llama-style decoder for 1024 devices in 4 pipeline stages of 256, each sharded over its own
# sub-mesh: the stages fold apart in the graph, maps and matrices name the run's ranks.
"$BIN/shardscope" plan samples/onnx/llama.onnx --devices 1024 --cluster dgx-h100 --dtype bf16 \
  --search recursive_programming --pipeline 4 --record "$RUNS/llama_pp.db" >/dev/null
gui "$RUNS/llama_pp.db" llama_pp_
inspect=$("$BIN/shardscope" inspect "$RUNS/llama_pp.db" --json)
redist=$(jq -r '[.redistributions[] | select(.tensor == "layers.16.self_attn.q_proj.MatMul")][0].id' <<<"$inspect")
mesh=$(jq -r '[.meshes[] | select(.name | test("stage 2"))][0].id' <<<"$inspect")
render "$RUNS/llama_pp.db" --view redistribution "$redist" --out "$OUT/llama_pp_render_redistribution.png"
render "$RUNS/llama_pp.db" --view tensor layers.20.mlp.down_proj.weight --rank 515 \
  --out "$OUT/llama_pp_render_tensor.png"
render "$RUNS/llama_pp.db" --view mesh "$mesh" --out "$OUT/llama_pp_render_mesh.png"
ls -la "$OUT"
