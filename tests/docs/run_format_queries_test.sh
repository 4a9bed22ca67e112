#!/usr/bin/env bash
# Records a short 8-device FFN run, then runs docs/run-format.md's queries against it.
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$SHARDSCOPE_BIN" train "$SHARDSCOPE_SOURCE_DIR/samples/models/ffn.yaml" --devices 8 --steps 3 \
  --limit 512 --data "$MNIST" --record "$tmp/ffn.db" >"$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log"; exit 1; }
python3 "$SHARDSCOPE_SOURCE_DIR/tests/docs/run_format_queries_test.py" \
  "$SHARDSCOPE_SOURCE_DIR/docs/run-format.md" "$tmp/ffn.db"
