#!/bin/sh
# Import and plan times of the architectures in samples/onnx, one row per architecture,
# device count and search:
#   scripts/onnx_plan_times.sh [--check] [--searches S1,S2] [--devices N1,N2] SHARDSCOPE MODEL...
#   e.g. scripts/onnx_plan_times.sh build/bin/shardscope gpt2 llama resnet50 vit_b16
# "import" is `plan --devices 1 --search semi_auto` (reading the file, building the graph
# with its loss, one trivial plan); "plan" is the whole `shardscope plan` at N devices,
# import included. Seconds of one run each: CPU (user + system) and wall-clock (on a busy
# machine the wall-clock is mostly waiting). --check: exit 1 if any plan fails.
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
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.out"' EXIT
# Runs shardscope with the arguments; sets code, cpu (user + sys) and wall.
timed() {
  /usr/bin/time -f "%e %U %S" -o "$tmp" "$bin" "$@" >"$tmp.out" 2>&1
  code=$?
  wall=$(cut -d' ' -f1 "$tmp")
  cpu=$(awk '{print $2 + $3}' "$tmp")
}
failed=0
printf '%-12s %7s %-22s %8s %8s %8s %8s  %s\n' model devices search imp_cpu imp_wall plan_cpu \
  plan_wall result
for model in "$@"; do
  file="$here/samples/onnx/$model.onnx"
  # A batch every device count divides (the decoders' examples are 1024 or 2048 tokens).
  batch=4096
  timed plan "$file" --devices 1 --batch 1 --search semi_auto
  import_cpu=$cpu
  import_wall=$wall
  for n in $(echo "$devices" | tr , ' '); do
    for s in $(echo "$searches" | tr , ' '); do
      timed plan "$file" --devices "$n" --batch "$batch" --search "$s"
      result=ok
      if [ $code -ne 0 ]; then
        result="exit $code: $(tail -n 1 "$tmp.out" | cut -c1-160)"
        failed=1
      fi
      printf '%-12s %7s %-22s %8.2f %8.2f %8.2f %8.2f  %s\n' "$model" "$n" "$s" "$import_cpu" \
        "$import_wall" "$cpu" "$wall" "$result"
    done
  done
done
[ $check -eq 1 ] && exit $failed
exit 0
