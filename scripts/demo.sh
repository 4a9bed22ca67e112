#!/usr/bin/env bash
# `make demo`: trains LeNet5 (seed 001) on real data on one device and says how to go on.
# Data: $DATA or $SHARDSCOPE_DATA when set (MNIST), else Debian's Fashion-MNIST package.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=build/bin/shardscope
data="${DATA:-${SHARDSCOPE_DATA:-}}"
if [[ -z "$data" ]]; then
  bash scripts/deps.sh --demo-data
  data=/usr/share/datasets/fashion-mnist
fi
EPOCHS="${EPOCHS:-1}"
echo "== Shardscope demo: LeNet5 on $data, $EPOCHS epoch(s), one device"
echo "\$ $BIN train samples/models/lenet5.yaml --data $data --epochs $EPOCHS"
"$BIN" train samples/models/lenet5.yaml --data "$data" --epochs "$EPOCHS"
cat <<MSG

== Next
  $BIN train --help                      every option of a training run
  $BIN train samples/models/ffn.yaml --ignore-parallel --data $data
                                          the seed-003 FFN (its strategies need issue 4)
  docs/model-format.md                    write your own model file
  docs/architecture.md                    how the engine is put together
Recording runs and the desktop debugger (shardscope-gui) are not in this build yet.
MSG
