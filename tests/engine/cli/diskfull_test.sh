#!/bin/bash
# The run file's disk fills up in the middle of a recorded run (issue 17; the reproducer is
# ../shared/repro/diskfull.sh). With --on-record-error stop every rank must end within
# seconds, together: exit 1, and the run file says "failed: rank 0: disk full ...". With
# continue, training goes on past the failure until a SIGTERM stops it, and the file says
# "interrupted: SIGTERM at step N (recording stopped at step M: rank 0: disk full ...)",
# N > M. Either way the file keeps every committed step, passes integrity_check and is one
# file again.
#
# Policy "small": the reproducer's own 2 MB tmpfs, too small to start on: the run is refused
# within seconds with exit 2, a message naming the file, the free space and the 16 MiB needed,
# and nothing is left on the file system.
#
#   diskfull_test.sh devices|mpi stop|continue|small SHARDSCOPE_BIN SOURCE_DIR [MPIEXEC]
#
# Exit 0: passed, 1: failed, 77: skipped (needs root to mount a small tmpfs).
set -u
mode=$1 policy=$2 bin=$3 src=$4 mpiexec=${5:-mpirun}
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "mounting a small tmpfs to fill needs root"
command -v sqlite3 > /dev/null || skip "the sqlite3 command is missing (apt-get install sqlite3)"
dir=$(mktemp -d) out=$(mktemp) pid=
size=24m
[ "$policy" = small ] && size=2m
if ! mount -t tmpfs -o size=$size tmpfs "$dir" 2> /dev/null; then
  rmdir "$dir"
  rm -f "$out"
  skip "cannot mount a tmpfs on $dir (no CAP_SYS_ADMIN here?)"
fi
cleanup() {
  [ -n "$pid" ] && kill -KILL -- "-$pid" 2> /dev/null
  umount "$dir" 2> /dev/null && rmdir "$dir"
  rm -f "$out"
}
trap cleanup EXIT
fail() {
  echo "FAIL ($mode, $policy): $*"
  echo "--- output of the run:"
  tail -20 "$out"
  exit 1
}
query() { sqlite3 -readonly "$dir/a.db" "$1" 2> /dev/null; }

db=$dir/a.db
args=(train "$src/samples/models/matmul_relu.yaml" --steps 1000000 --record "$db"
      --log-every 100000)
[ "$policy" = small ] || args+=(--on-record-error "$policy")
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
start() {  # the run, in its own process group; sets pid
  if [ "$mode" = mpi ]; then
    setsid "$mpiexec" -np 4 --allow-run-as-root --oversubscribe "$bin" "${args[@]}" \
      --ignore-parallel > "$out" 2>&1 &
  else
    setsid "$bin" "${args[@]}" --devices 8 > "$out" 2>&1 &
  fi
  pid=$!
}
start

if [ "$policy" = small ]; then
  # Twice: on the empty 2 MB file system, then on it filled (the reproducer's timing).
  for round in empty filled; do
    if [ "$round" = filled ]; then
      dd if=/dev/zero of="$dir/fill" bs=4k 2> /dev/null
      start
    fi
    for _ in $(seq 1 300); do
      kill -0 "$pid" 2> /dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2> /dev/null && fail "$round: still running 30 s after starting on 2 MB"
    wait "$pid"
    rc=$?
    pid=
    [ "$rc" = 2 ] || fail "$round: exit code $rc, expected 2"
    grep -q "error: $db: cannot start recording: only [0-9.]* [KM]*i*B free on the file system of '$dir', a run needs at least 16[.0]* MiB" "$out" ||
      fail "$round: the refusal does not name the file, the free space and the 16 MiB needed"
    grep -q -- "--record PATH writes the run file elsewhere, --no-record trains without one" "$out" ||
      fail "$round: the refusal does not say how to go on"
    left=$(ls -A "$dir" | grep -v '^fill$')
    [ -z "$left" ] || fail "$round: left behind on the file system: $left"
    echo "PASS ($mode, $policy, $round): $(grep 'error:' "$out" | head -1)"
  done
  exit 0
fi

# Fill the disk once the run has committed some steps.
for _ in $(seq 1 900); do
  n=$(query "select count(*) from step")
  [ "${n:-0}" -ge 20 ] && break
  kill -0 "$pid" 2> /dev/null || fail "the run ended before recording 20 steps"
  sleep 0.1
done
[ "${n:-0}" -ge 20 ] || fail "the run recorded no 20 steps in 90 s"
dd if=/dev/zero of="$dir/fill" bs=4k 2> /dev/null
filled=$(date +%s)
if [ "$policy" = continue ]; then  # once recording has stopped, let it train on, then stop it
  for _ in $(seq 1 300); do
    grep -q "warning: recording stopped" "$out" && break
    kill -0 "$pid" 2> /dev/null || fail "the run ended"
    sleep 0.1
  done
  grep -q "warning: recording stopped" "$out" || fail "no 'recording stopped' warning in 30 s"
  sleep 1
  kill -TERM "$pid"
  filled=$(date +%s)
fi

# Watchdog: every rank must be gone soon after.
limit=30
while kill -0 "$pid" 2> /dev/null; do
  [ $(($(date +%s) - filled)) -ge $limit ] && fail "still running $limit s after the disk filled up (a hang)"
  sleep 0.1
done
wait "$pid"
rc=$?
pid=
echo "ended $(($(date +%s) - filled)) s after the disk filled up (or SIGTERM), exit code $rc"

status=$(query "select status from run")
message=$(query "select status_message from run")
if [ "$policy" = stop ]; then
  [ "$rc" = 1 ] || fail "exit code $rc, expected 1"
  grep -q "error: rank 0: disk full" "$out" || fail "no 'error: rank 0: disk full' message"
  [ "$status" = failed ] || fail "status '$status', expected failed"
  case "$message" in "rank 0: disk full"*) ;; *) fail "status message '$message'" ;; esac
else
  [ "$mode" = mpi ] || [ "$rc" = 143 ] || fail "exit code $rc, expected 143 (SIGTERM)"
  grep -q "warning: recording stopped at step [0-9]*: rank 0: disk full" "$out" ||
    fail "no 'recording stopped at step M: rank 0: disk full' warning"
  [ "$status" = interrupted ] || fail "status '$status', expected interrupted"
  re='^SIGTERM at step ([0-9]+) \(recording stopped at step ([0-9]+): rank 0: disk full'
  [[ "$message" =~ $re ]] || fail "status message '$message'"
  [ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ] || fail "training did not go on: '$message'"
  [ "$(query 'select max(step) from step')" = "${BASH_REMATCH[2]}" ] ||
    fail "the file does not end at step ${BASH_REMATCH[2]}"
fi
[ "$(query 'pragma integrity_check')" = ok ] || fail "integrity_check failed"
[ "$(query 'select count(*) = max(step) and min(step) = 1 from step')" = 1 ] ||
  fail "the recorded steps are not 1..N"
[ "$(query 'select count(*) >= 20 from step')" = 1 ] || fail "committed steps were lost"
for side in "$db-wal" "$db-shm" "$db.lock"; do
  [ -e "$side" ] && fail "$side was left behind"
done
echo "PASS ($mode, $policy): $status: $message"
