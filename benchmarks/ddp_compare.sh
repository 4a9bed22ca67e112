#!/usr/bin/env bash
# Data-parallel step time on 2 MPI ranks against PyTorch DDP (gloo) on 2 processes: the seeds'
# FFN and LeNet5, global batch 32, one thread per process, runs interleaved pair by pair.
#
#   [STEPS=200] benchmarks/ddp_compare.sh [BUILD_DIR] [RUNS]        (defaults: build, 3)
#
# Shardscope: mpirun -np 2 shardscope train MODEL --ignore-parallel --steps STEPS (MNIST, its
# "ms/step": the mean over steps of the slowest rank's step). PyTorch: benchmarks/ddp_torch.py
# (synthetic batches of the same shapes; its ms/step over STEPS steps after 20 warm-up steps).
# Each pair runs A (Shardscope) then B (PyTorch) through PAIR_TOOL (default: run them in turn
# here; set PAIR_TOOL to a paired-timing tool that takes `-n RUNS -- A --vs B`). Prints each
# side's median ms/step and the ratio shardscope / pytorch (below 1: Shardscope is faster).
# Needs Debian's python3-torch (/usr/bin/python3) and MNIST where `train` finds it.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
runs=${2:-3}
steps=${STEPS:-200}
bin=$build/bin/shardscope
py=/usr/bin/python3
out=$(mktemp -d /tmp/ddp_compare.XXXXXX)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
# Ranks wait in collectives by yielding the core, not spinning (more processes than cores).
mpi=(mpirun -np 2 --allow-run-as-root --oversubscribe --bind-to none --mca mpi_yield_when_idle 1)

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

for model in ffn lenet5; do
  ours="${mpi[*]} $bin train $src/samples/models/$model.yaml --ignore-parallel --steps $steps --no-record"
  theirs="$py $src/benchmarks/ddp_torch.py $model --ranks 2 --batch 32 --steps $steps"
  a="sh -c 'exec $ours >>$out/$model.ours 2>&1'"
  b="sh -c 'exec $theirs >>$out/$model.torch 2>&1'"
  if [[ -n "${PAIR_TOOL:-}" ]]; then
    eval "$PAIR_TOOL -n $runs --timeout 1800 --vs \"$b\" -- $a" | grep -E "wall|ratio|cpu" || true
  else
    for ((i = 0; i < runs; ++i)); do eval "$a"; eval "$b"; done
  fi
  mine=$(grep -o '([0-9.]* ms/step)' "$out/$model.ours" | tr -d '(' | awk '{print $1}' | median)
  yard=$(grep -o 'ddp [a-z0-9]*: [0-9.]* ms/step' "$out/$model.torch" | awk '{print $3}' | median)
  printf '%-7s shardscope %8.3f ms/step   pytorch ddp %8.3f ms/step   ratio %.2f   (%d + %d runs)\n' \
    "$model" "$mine" "$yard" "$(awk -v a="$mine" -v b="$yard" 'BEGIN {print a / b}')" \
    "$(grep -c 'ms/step' "$out/$model.ours")" "$(grep -c 'ms/step' "$out/$model.torch")"
done
echo "outputs: $out"
