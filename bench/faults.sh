#!/usr/bin/env bash
# The faults of issue 15 against a hetrun binary: for each, the time from the fault to hetrun's
# exit and the exit code (timeout = still running after the limit, killed). Figures, no
# assertions; run it against an older binary to compare (HETRUN=path/to/old/hetrun).
# Usage: bench/faults.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: bench/faults.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
hetrun=${HETRUN:-$build/bin/hetrun}
helper=$build/tests/helpers/worker_helper
limit=${FAULTS_LIMIT:-40}
[[ -x $hetrun && -x $helper ]] || { echo "faults.sh: build $build first" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HETRUN_TERMINATION_LOG=$tmp/termination-log HETRUN_RUN_BASE=$tmp/runs

ms() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }
row() { printf '%-58s %10s %8s  %s\n' "$1" "$2" "$3" "${4:-}"; }
row fault "ms" "exit" "note"

# start_bg OUT CMD...: hetrun in the background (own process group), stdout to OUT.
start_bg() { local out=$1; shift; setsid "$@" >"$out" 2>"$tmp/err" & pid=$!; }
# wait_exit PID: waits up to $limit s; sets code to the exit code, or "timeout" (the group is
# then killed), and el to the ms since $t.
wait_exit() {
  local p=$1 deadline=$(( $(date +%s%N) + limit * 1000000000 ))
  while alive "$p" && (($(date +%s%N) < deadline)); do sleep 0.01; done
  el=$(ms $t)
  if alive "$p"; then
    kill -KILL -- "-$p" 2>/dev/null; wait "$p" 2>/dev/null; code=timeout
  else
    wait "$p"; code=$?
  fi
}
# alive PID: running and not a zombie.
alive() {
  local stat
  { read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}
# run_timed LIMIT CMD...: sets code (124 = timeout) and el.
run_timed() { local l=$1; shift; t=$(date +%s%N); timeout "$l" "$@" >/dev/null 2>&1; code=$?; el=$(ms $t); }

# 1. yes into a stdout nobody reads; SIGTERM with a 2 s grace period.
mkfifo "$tmp/fifo"; exec 7<>"$tmp/fifo"   # a pipe held open, never read
start_bg /dev/null bash -c "exec \"$hetrun\" run --nproc-per-node 2 --grace-period 2s -- yes flood >&7"
sleep 1.5; t=$(date +%s%N); kill -TERM $pid; wait_exit $pid
row "flood into a stopped stdout reader, SIGTERM (grace 2s)" "$el" "$code"
exec 7>&-
# 2. yes into a file; SIGTERM with a 2 s grace period.
start_bg "$tmp/flood.out" "$hetrun" run --nproc-per-node 2 --grace-period 2s -- yes flood
sleep 1.5; t=$(date +%s%N); kill -TERM $pid; wait_exit $pid
row "flood into a file, SIGTERM (grace 2s)" "$el" "$code"; rm -f "$tmp/flood.out"
# 3. a grandchild orphaned when the sweep kills its parent (grace 20s).
t=$(date +%s%N); start_bg /dev/null "$hetrun" run --grace-period 20s -- "$helper" grandorphan "$tmp/g"
wait_exit $pid
row "grandchild orphaned by the sweep (grace 20s)" "$el" "$code" "grandchild saw: $(tail -n +2 "$tmp/g" | tr '\n' ' ')"
# 4. SIGTERM, then SIGHUP/SIGUSR1 every ms while hetrun exits (5 runs).
codes=""
for r in 1 2 3 4 5; do
  rm -f "$tmp/trap0"
  start_bg /dev/null "$hetrun" run -- "$helper" trap "$tmp/trap0" 0 0
  for k in $(seq 200); do [[ -s $tmp/trap0 ]] && break; sleep 0.01; done
  kill -TERM $pid; sleep 0.05
  while kill -0 $pid 2>/dev/null; do kill -HUP $pid 2>/dev/null; kill -USR1 $pid 2>/dev/null; sleep 0.001; done
  wait_exit $pid; codes+="$code "
done
row "SIGTERM then a storm of SIGHUP/SIGUSR1 while exiting (5x)" "-" "${codes% }"
# 5. hetrun started with SIGINT ignored and fds 7, 9 open; then SIGINT.
rm -f "$tmp/trap0"
start_bg "$tmp/fds.out" bash -c "trap '' INT; exec 7</etc/hostname 9</etc/hostname; exec \"$hetrun\" run -- \"$helper\" fds signals trap \"$tmp/trap0\" 0 0"
for k in $(seq 200); do [[ -s $tmp/trap0 ]] && break; sleep 0.01; done
t=$(date +%s%N); kill -INT $pid; wait_exit $pid
row "inherited SIG_IGN for SIGINT and fds 7, 9; then SIGINT" "$el" "$code" "worker: $(head -2 "$tmp/fds.out" | tr '\n' ';')"
# 6. heartbeat time in the future, --hang-timeout 2s.
t=$(date +%s%N)
start_bg /dev/null "$hetrun" run --hang-timeout 2s -- /bin/sh -c 'touch -d 2099-01-01 "$HETRUN_HEARTBEAT"; exec sleep 600'
wait_exit $pid; row "heartbeat file time in 2099, --hang-timeout 2s" "$el" "$code"
# 7. --hang-timeout that rounds to 0.
t=$(date +%s%N); start_bg /dev/null "$hetrun" run --hang-timeout 0.0001 -- true
wait_exit $pid; row "--hang-timeout 0.0001" "$el" "$code"
# 8. worker exit codes and causes.
for c in 80 64 75; do
  t=$(date +%s%N); start_bg /dev/null "$hetrun" run -- "$helper" exit $c
  wait_exit $pid; row "worker exits $c" "$el" "$code"
done
echo '{"message": {"message": "OutOfMemoryError: CUDA out of memory.", "extraInfo": {"py_callstack": "", "timestamp": "0"}}}' >"$tmp/oom.json"
t=$(date +%s%N); start_bg /dev/null "$hetrun" run -- /bin/sh -c "cp $tmp/oom.json \"\$TORCHELASTIC_ERROR_FILE\"; exit 1"
wait_exit $pid; row "worker writes a CUDA OOM error file, exits 1" "$el" "$code"
t=$(date +%s%N); start_bg /dev/null "$hetrun" run -- /bin/sh -c 'echo "Watchdog caught collective operation timeout: WorkNCCL" >&2; kill -ABRT $$'
wait_exit $pid; row "NCCL watchdog timeout, SIGABRT" "$el" "$code"
t=$(date +%s%N); start_bg "$tmp/abort.out" "$hetrun" run --max-restarts 5 -- "$helper" out attempt err "assert failed" kill 6
wait_exit $pid
row "the same SIGABRT every attempt, --max-restarts 5" "$el" "$code" "attempts: $(grep -c attempt "$tmp/abort.out")"
# 9. a full disk under --log-dir.
mkdir -p "$tmp/logs"; ln -sf /dev/full "$tmp/logs/rank_0.log"
start_bg /dev/null "$hetrun" run --log-dir "$tmp/logs" -- "$helper" out one out two
wait_exit $pid
row "--log-dir on a full disk (/dev/full)" "-" "$code" "logged: $(grep -c 'could not be written' "$tmp/err")"
# 10. SIGKILL of hetrun: what stays in the scratch folders.
start_bg /dev/null env TMPDIR="$tmp/scratch" "$hetrun" run --hang-timeout 60s -- sleep 60
mkdir -p "$tmp/scratch"; sleep 1; kill -KILL $pid; wait $pid 2>/dev/null
left=$(find "$tmp/scratch" "$tmp/runs" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
start_bg /dev/null env TMPDIR="$tmp/scratch" "$hetrun" run -- true; wait_exit $pid
after=$(find "$tmp/scratch" "$tmp/runs" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
row "SIGKILL of hetrun, then another hetrun run" "-" "-" "folders left: $left after the kill, $after after the next run"
# 11. untrusted inputs.
corpus=$here/../tests/fuzz/corpus
run_timed "$limit" "$hetrun" check --target-arch 8.0 "$corpus/fatbin/elf_wrappers_times_relocations"
row "check: crafted 1 MiB ELF (21k wrappers x 21k relocations)" "$el" "$code"
run_timed "$limit" "$hetrun" plan --cluster "$here/../examples/plan/seed-cluster.json" --model "$corpus/plan/nested_100k"
row "plan: 100 KB of [" "$el" "$code"
run_timed "$limit" "$hetrun" plan --cluster "$here/../examples/plan/seed-cluster.json" --model "$corpus/plan/nested_balanced_100k"
row "plan: 50k [ then 50k ] (139 = SIGSEGV)" "$el" "$code"
run_timed "$limit" "$hetrun" simulate --scenario "$corpus/scenario/nested_100k"
row "simulate: 100 KB of [" "$el" "$code"
run_timed 10 "$hetrun" plan --cluster "$here/../examples/plan/seed-cluster.json" --model "$tmp/fifo"
row "plan: a FIFO as --model (limit 10 s; 124 = timeout)" "$el" "$code"
t=$(date +%s%N); (ulimit -v 4000000; timeout 10 "$hetrun" simulate --scenario /dev/zero >/dev/null 2>&1); code=$?; el=$(ms $t)
row "simulate: /dev/zero as --scenario (limit 10 s, 4 GB)" "$el" "$code"
t=$(date +%s%N)
/usr/bin/time -f %M -o "$tmp/rss" "$hetrun" inspect --ptx-target "$corpus/fatbin/elf_entry_claims_1gib" >/dev/null 2>&1
code=$?; rss=$(tail -1 "$tmp/rss")
row "inspect --ptx-target: entry claiming 1 GiB from 16 bytes" "$(ms $t)" "$code" "peak RSS ${rss} KiB"
t=$(date +%s%N); (ulimit -v 600000; "$hetrun" inspect --ptx-target "$corpus/fatbin/elf_entry_claims_1gib" >/dev/null 2>&1); code=$?
row "  the same under a 600 MB address-space limit (134 = abort)" "$(ms $t)" "$code"
exit 0
