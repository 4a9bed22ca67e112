#!/usr/bin/env bash
# The spread of `shardscope calibrate`'s figures over repeated calibrations (issue 7): how far
# one calibration's profile can move the predicted step time on this machine.
#
# Calibrates --times times with each --bin (several binaries alternate, so that both see the
# same load: e.g. a build from before a change and one from after), then prints a Markdown
# table per figure of the profile (group sync, hand-off, compute slots, bandwidth, one
# thread's GEMM, memory bandwidth, the MatMul and Conv2D kernels at 256^3, MaxPool2D) and the
# predicted step time of each MODEL under each profile (`plan --json --profile`, planned by
# the first binary): min–max (median) and max / min over the calibrations.
#
# Usage: scripts/calibrate_spread.sh [--bin build/bin/shardscope]... [--times 8]
#            [--devices 8] [--keep DIR] [-- CALIBRATE ARGS] [MODEL.yaml ...]
#   Without MODEL arguments: matmul_relu, dense_matmul_net, ffn, matmul3 and lenet5 from
#   samples/models/. --keep DIR keeps the profiles (DIR/<n>.<i>.json, n = the --bin's index).
#   Arguments after -- go to every calibrate (e.g. -- --trials 7 --duration 0).
# Example (about 1 minute: 8 calibrations of ~5 s and the plans):
#   scripts/calibrate_spread.sh --times 8
#   scripts/calibrate_spread.sh --bin /tmp/before/shardscope --bin build/bin/shardscope
set -euo pipefail

bins=()
times=8
devices=8
keep=""
extra=()
models=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bins+=("$2"); shift 2 ;;
    --times) times="$2"; shift 2 ;;
    --devices) devices="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    --) shift; while [[ $# -gt 0 && "$1" != *.yaml ]]; do extra+=("$1"); shift; done ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    *) models+=("$1"); shift ;;
  esac
done
[[ ${#bins[@]} -gt 0 ]] || bins=(build/bin/shardscope)
for b in "${bins[@]}"; do
  [[ -x "$b" ]] || { echo "no executable $b (cmake --build build --target shardscope)" >&2; exit 2; }
done
[[ ${#models[@]} -gt 0 ]] || models=(samples/models/{matmul_relu,dense_matmul_net,ffn,matmul3,lenet5}.yaml)

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
[[ -z "$keep" ]] || { mkdir -p "$keep"; dir="$keep"; trap - EXIT; }
echo "load average before: $(cut -d' ' -f1 /proc/loadavg)"
for ((i = 0; i < times; ++i)); do
  for n in "${!bins[@]}"; do
    "${bins[$n]}" calibrate --devices "$devices" --out "$dir/$n.$i.json" "${extra[@]}" > /dev/null
  done
done
echo "load average after: $(cut -d' ' -f1 /proc/loadavg)"

python3 - "$dir" "${bins[0]}" "$devices" "${#bins[@]}" "${bins[@]}" -- "${models[@]}" <<'EOF'
import json, os, statistics, subprocess, sys
dir, planner, devices, nbins = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
bins = sys.argv[5:5 + nbins]
models = sys.argv[5 + nbins + 1:]
figures = [
    ("group sync (all-reduce on all devices) us", lambda j: j["group_sync_s"] * 1e6),
    ("hand-off us", lambda j: j["collective_handoff_s"] * 1e6),
    ("compute slots", lambda j: j["compute_slots"]),
    ("bandwidth GB/s", lambda j: j["default_bandwidth"] / 1e9),
    ("GEMM, one thread GFLOP/s", lambda j: j["flops"] / 1e9),
    ("memory GB/s", lambda j: j["memory_bandwidth"] / 1e9),
    ("MatMul kernel 256^3 GFLOP/s", lambda j: j.get("gemm_rates", {}).get("base_flops", 0) / 1e9),
    ("Conv2D kernel 256^3 GFLOP/s", lambda j: j.get("conv_gemm_rates", {}).get("base_flops", 0) / 1e9),
    ("MaxPool2D GB/s", lambda j: j.get("kernel_rates", {}).get("MaxPool2D", 0) / 1e9),
]
def predicted_ms(profile, model):
    out = subprocess.run([planner, "plan", model, "--devices", devices, "--profile", profile, "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["predicted_step_seconds"] * 1e3
columns = []
for n in range(nbins):
    files = sorted(f for f in os.listdir(dir) if f.startswith(f"{n}.") and f.endswith(".json"))
    rows = []
    for f in files:
        path = os.path.join(dir, f)
        j = json.load(open(path))
        rows.append([g(j) for _, g in figures] + [predicted_ms(path, m) for m in models])
    columns.append(rows)
names = [name for name, _ in figures] + [os.path.basename(m)[:-5] + " predicted ms" for m in models]
print("| figure | " + " | ".join(f"{b}: min–max (median) | max / min" for b in bins) + " |")
print("|---|" + "---|---:|" * nbins)
for i, name in enumerate(names):
    cells = []
    for rows in columns:
        v = [r[i] for r in rows]
        ratio = f"{max(v) / min(v):.2f}" if min(v) > 0 else "–"
        cells.append(f"{min(v):.3g}–{max(v):.3g} ({statistics.median(v):.3g}) | {ratio}")
    print(f"| {name} | " + " | ".join(cells) + " |")
print(f"{len(columns[0])} calibrations per binary")
EOF
