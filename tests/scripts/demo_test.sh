#!/usr/bin/env bash
# `make demo` (scripts/demo.sh) shows the product: an 8-device run with a searched plan and
# redistributions, recorded; two PNGs; the GUI command. Usage: demo_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
BUILD_DIR=$build DEMO_DIR=$tmp/demo STEPS=20 bash "$src/scripts/demo.sh" >"$tmp/out.txt" 2>&1 ||
  { cat "$tmp/out.txt"; exit 1; }
fail() { echo "FAIL: $*"; cat "$tmp/out.txt"; exit 1; }
run=$tmp/demo/ffn.db
[[ -f $run ]] || fail "no run file"
read -r devices search redists steps < <(python3 - "$run" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
devices, search = db.execute("SELECT devices, search FROM run").fetchone()
redists = db.execute("SELECT count(*) FROM redistribution r WHERE EXISTS "
               "(SELECT 1 FROM redist_step s WHERE s.redistribution_id = r.id)").fetchone()[0]
steps = db.execute("SELECT count(*) FROM step").fetchone()[0]
print(devices, search, redists, steps)
PY
)
[[ $devices == 8 ]] || fail "devices $devices, not 8"
[[ $search == sharding_propagation ]] || fail "run.search '$search', not the search used"
(( redists > 0 )) || fail "no redistribution with steps"
[[ $steps == 20 ]] || fail "$steps training steps recorded, not 20"
grep -q "test accuracy" "$tmp/out.txt" || fail "no training"
grep -q "shardscope-gui $run" "$tmp/out.txt" || fail "no GUI command"
if [[ -x $build/bin/shardscope-render ]]; then
  for png in graph.png redistribution-0.png; do
    head -c 8 "$tmp/demo/$png" | od -An -tx1 | grep -q "89 50 4e 47" || fail "$png is not a PNG"
  done
fi
echo "demo: $devices devices, $search, $redists redistributions, $steps steps: ok"
