#!/bin/sh
# Import and plan times of the architectures in samples/onnx, one row per architecture,
# device count and search:
#   scripts/onnx_plan_times.sh [--check] [--searches S1,S2] [--devices N1,N2] SHARDSCOPE MODEL...
#   e.g. scripts/onnx_plan_times.sh build/bin/shardscope gpt2 llama resnet50 vit_b16
# "import" is `plan --devices 1 --search semi_auto` (reading the file, building the graph
# with its loss, one trivial plan); "plan" is the whole `shardscope plan` at N devices,
# import included. Wall-clock seconds of one run each. --check: exit 1 if any plan fails.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
check=0
searches=sharding_propagation,recursive_programming,dynamic_programming
devices=8,64,1024,4096
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1; shift ;;
    --searches) searches=$2; shift 2 ;;
    --devices) devices=$2; shift 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ]; then
  echo "usage: $0 [--check] [--searches S1,S2] [--devices N1,N2] SHARDSCOPE MODEL..." >&2
  exit 2
fi
bin=$1
shift
now() { date +%s.%N; }
failed=0
printf '%-12s %7s %-22s %8s %8s  %s\n' model devices search import_s plan_s result
for model in "$@"; do
  file="$here/samples/onnx/$model.onnx"
  # A batch every device count divides (the decoders' examples are 1024 or 2048 tokens).
  batch=4096
  t0=$(now)
  "$bin" plan "$file" --devices 1 --batch 1 --search semi_auto >/dev/null 2>&1
  t1=$(now)
  import=$(echo "$t1 - $t0" | bc)
  for n in $(echo "$devices" | tr , ' '); do
    for s in $(echo "$searches" | tr , ' '); do
      t0=$(now)
      out=$("$bin" plan "$file" --devices "$n" --batch "$batch" --search "$s" 2>&1)
      code=$?
      t1=$(now)
      result=ok
      if [ $code -ne 0 ]; then
        result="exit $code: $(echo "$out" | tail -n 1 | cut -c1-160)"
        failed=1
      fi
      printf '%-12s %7s %-22s %8.2f %8.2f  %s\n' "$model" "$n" "$s" "$import" \
        "$(echo "$t1 - $t0" | bc)" "$result"
    done
  done
done
[ $check -eq 1 ] && exit $failed
exit 0
