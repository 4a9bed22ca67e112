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
RUN=runs/demo-lenet5-$(date +%Y%m%d-%H%M%S).db
echo "\$ $BIN train samples/models/lenet5.yaml --data $data --epochs $EPOCHS --record $RUN"
"$BIN" train samples/models/lenet5.yaml --data "$data" --epochs "$EPOCHS" --record "$RUN"
cat <<MSG

== Next
  $BIN inspect $RUN                 what the run recorded
  build/bin/shardscope-gui $RUN     open it in the desktop debugger
  $BIN train samples/models/matmul3.yaml --data $data --log-every 10
                                          seed 004 on 8 in-process devices (layouts, all-reduce)
  $BIN train --help                      every option of a training run
  docs/model-format.md                    write your own model file
  docs/architecture.md                    how the engine is put together
MSG
