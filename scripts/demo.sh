#!/usr/bin/env bash
# `make demo`: what Shardscope is for, in under a minute after the build. Seed 003's FFN on 8
# in-process devices: strategies searched (sharding propagation from the two configured
# MatMuls), redistributions planned and run, every decision recorded; then two pictures
# (the graph, one redistribution) for users without a display, and how to open the GUI.
# Data: the model file's mnist (ffn.yaml), found as `train --help` says; DATA=dir overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
BIN=$BUILD_DIR/bin/shardscope
RENDER=$BUILD_DIR/bin/shardscope-render
STEPS="${STEPS:-600}"
OUT="${DEMO_DIR:-runs/demo-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$OUT"
RUN=$OUT/ffn.db
start=$(date +%s)
data_args=()
[[ -n "${DATA:-}" ]] && data_args=(--data "$DATA")

echo "== 1. The plan: seed 003's FFN on 8 devices (nothing runs yet)"
echo "\$ $BIN plan samples/models/ffn.yaml --devices 8 --show 6"
"$BIN" plan samples/models/ffn.yaml --devices 8 --show 6
echo
echo "== 2. Training it on 8 in-process devices, $STEPS steps, recorded"
echo "\$ $BIN train samples/models/ffn.yaml --devices 8 --steps $STEPS --lr 0.05 --record $RUN ${data_args[*]}"
"$BIN" train samples/models/ffn.yaml --devices 8 --steps "$STEPS" --lr 0.05 --log-every 200 \
  --record "$RUN" "${data_args[@]}"
echo
if [[ -x $RENDER ]]; then
  echo "== 3. Pictures of the run (no display needed)"
  QT_QPA_PLATFORM=offscreen "$RENDER" "$RUN" --view graph --forward-only --out "$OUT/graph.png" \
    2>/dev/null
  # Redistribution 0: the first one of the forward pass (dense1's partial sums reduce-scattered).
  QT_QPA_PLATFORM=offscreen "$RENDER" "$RUN" --view redistribution 0 --out \
    "$OUT/redistribution-0.png" 2>/dev/null
  echo "  $OUT/graph.png               the forward graph, strategies coloured, redistributions orange"
  echo "  $OUT/redistribution-0.png    redistribution 0: layouts before/after, who sends what"
else
  echo "== 3. (no pictures: the GUI and shardscope-render were not built)"
fi
cat <<MSG

== Done in $(( $(date +%s) - start )) s. Next
  $BUILD_DIR/bin/shardscope-gui $RUN   open the run in the desktop debugger: graph, strategies
                                       and why, each redistribution step by step
  $BIN inspect $RUN                    the run in the terminal
  $BIN render $RUN --view tensor dense1.weight --rank 3 --out w.png
  $BIN plan samples/models/ffn.yaml --devices 8 --export dtensor plan.py   (docs/export.md)
  docs/model-format.md, docs/architecture.md
MSG
