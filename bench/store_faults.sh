#!/usr/bin/env bash
# The store-side faults of issue 15 against a hetrun binary, two or three launchers on 127.0.0.1:
# for each, the time from the fault to the exit of the launcher that must react, and its exit
# code ("timeout": still running after the limit, killed). Figures, no assertions; run it against
# an older binary to compare (HETRUN=path/to/old/bin/hetrun, its lib/ next to its bin/).
# Usage: bench/store_faults.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: bench/store_faults.sh BUILD_DIR}
hetrun=${HETRUN:-$build/bin/hetrun}
lib=$(dirname "$(dirname "$hetrun")")/lib/libhetrun_rendezvous.so
limit=${FAULTS_LIMIT:-40}
if [[ ! -e $lib ]]; then
  echo "store faults: skipped ($lib not built: configured without libtorch)"
  exit 0
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL -- "-$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
export HETRUN_FAKE_GPUS=A100-SXM4-80GB:8.0:81049

ms() { echo $((($(date +%s%N) - $1) / 1000000)); }
row() { printf '%-62s %8s %8s  %s\n' "$1" "$2" "$3" "${4:-}"; }
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# node NAME RANK NNODES PORT [FLAGS...] -- WORKER: a launcher in its own session; pid in $pid.
node() {
  local name=$1 rank=$2 n=$3 p=$4
  shift 4
  local flags=()
  while [[ $1 != -- ]]; do flags+=("$1"); shift; done
  shift
  HETRUN_TERMINATION_LOG=$tmp/$name.term setsid "$hetrun" run --nnodes "$n" --node-rank "$rank" \
    --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$p" "${flags[@]}" \
    -- sh -c "$1" >"$tmp/$name.log" 2>&1 &
  pid=$!
  pids+=("$pid")
}
# wait_exit PID: sets code (or timeout) and el (ms since $t).
wait_exit() {
  local p=$1 deadline=$(($(date +%s%N) + limit * 1000000000))
  while kill -0 "$p" 2>/dev/null && (($(date +%s%N) < deadline)); do
    [[ $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) == Z ]] && break
    sleep 0.01
  done
  el=$(ms "$t")
  if kill -0 "$p" 2>/dev/null && [[ $(awk '{print $3}' "/proc/$p/stat" 2>/dev/null) != Z ]]; then
    kill -CONT "$p" 2>/dev/null; kill -KILL -- "-$p" 2>/dev/null; wait "$p" 2>/dev/null
    code=timeout
  else
    wait "$p"; code=$?
  fi
}
until_log() {  # until_log FILE TEXT: waits up to 60 s for TEXT in FILE
  for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}
term() { head -c 110 "$tmp/$1.term" 2>/dev/null | tr '\n' ' '; }

echo "store faults with $hetrun"
row fault "ms" "exit" "note"

p=$(port)
node f0 0 2 "$p" --peer-timeout 3s -- "sleep 300"; a=$pid
node f1 1 2 "$p" --peer-timeout 3s -- "sleep 300"; b=$pid
until_log "$tmp/f1.log" "2 nodes in"; sleep 0.5
kill -STOP "$a"; t=$(date +%s%N); wait_exit "$b"
row "node 0 frozen (kill -STOP), node 1 (--peer-timeout 3s)" "$el" "$code"
kill -CONT "$a"; kill -KILL -- "-$a" 2>/dev/null; wait "$a" 2>/dev/null

p=$(port)
node r0 0 2 "$p" --rdzv-timeout 60s -- "true"
until_log "$tmp/r0.log" "joined as node 0"
kill -TERM "$pid"; t=$(date +%s%N); wait_exit "$pid"
row "SIGTERM while waiting at the rendezvous" "$el" "$code" "log: $(term r0)"

p=$(port)
HETRUN_TERMINATION_LOG=$tmp/u.term unshare --pid --fork "$hetrun" run --nnodes 2 --node-rank 0 \
  --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$p" --rdzv-timeout 60s -- true \
  >"$tmp/u.log" 2>&1 &
u=$!; pids+=("$u")
until_log "$tmp/u.log" "joined as node 0"
child=$(cat "/proc/$u/task/$u/children")
kill -INT "$child"; t=$(date +%s%N); wait_exit "$u"
row "SIGINT to hetrun as PID 1 (unshare --pid), at the rendezvous" "$el" "$code" "log: $(head -c 80 "$tmp/u.term" 2>/dev/null)"

p=$(port)
node w0 0 2 "$p" -- "true"; a=$pid
node w1 1 2 "$p" -- "sleep 20"; b=$pid
until_log "$tmp/w0.log" "2 nodes in"; sleep 3
kill -TERM "$a"; t=$(date +%s%N); wait_exit "$a"
row "SIGTERM in node 0's final wait for node 1" "$el" "$code" "log: $(term w0)"
wait_exit "$b"

p=$(port)
node l0 0 2 "$p" --peer-timeout 8s -- "sleep 300"; a=$pid
node l1 1 2 "$p" --peer-timeout 8s -- 'sleep 1; kill -9 $PPID'
until_log "$tmp/l0.log" "node 1 lost"
wait "$(( ${pids[-1]} ))" 2>/dev/null
t=$(date +%s%N); wait_exit "$a"
row "node 1 SIGKILLed: node 0, from 'lost' to exit (peer 8s)" "$el" "$code"

p=$(port)
HETRUN_JOB_SECRET=job node s0 0 2 "$p" --rdzv-timeout 8s -- "true"; a=$pid
until_log "$tmp/s0.log" "joined as node 0"
HETRUN_JOB_SECRET=guess node x1 1 2 "$p" --rdzv-timeout 8s -- "true"; x=$pid
until_log "$tmp/x1.log" "\(joined\|connected\) as node 1"
HETRUN_JOB_SECRET=job node s1 1 2 "$p" --rdzv-timeout 8s -- "true"; b=$pid
t=$(date +%s%N); wait_exit "$b"; c1=$code; wait_exit "$a"
row "stranger claims rank 1 first; the real nodes 0, 1" "$el" "$code, $c1"
wait_exit "$x"

p=$(port)
t=$(date +%s%N)
HETRUN_JOB_SECRET=alpha node d0 0 2 "$p" --rdzv-timeout 3s -- "true"; a=$pid
HETRUN_JOB_SECRET=beta node d1 1 2 "$p" --rdzv-timeout 3s -- "true"; b=$pid
wait_exit "$a"; c0=$code; wait_exit "$b"
row "nodes 0, 1 with different secrets (--rdzv-timeout 3s)" "$el" "$c0, $code"

p=$(port)
first='[ "$TORCHELASTIC_RESTART_COUNT" = 0 ]'
node j0 0 2 "$p" --max-restarts 1 --grace-period 5s -- "if $first; then exec sleep 300; fi"; a=$pid
node j1 1 2 "$p" --max-restarts 1 --grace-period 5s -- "if $first; then sleep 1; exit 75; fi"; b=$pid
t=$(date +%s%N); wait_exit "$a"; c0=$code; wait_exit "$b"
row "node 1's worker exits 75 (--max-restarts 1): nodes 0, 1" "$el" "$c0, $code"
