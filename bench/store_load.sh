#!/usr/bin/env bash
# Requests per second at the rendezvous store while a job runs, for 4, 8 and 16 hetrun launchers
# on this machine (127.0.0.1): each launcher counts the requests its heartbeat connection sends
# (libhetrun_rendezvous.so counts every TCPStore request; a Get is two: check, then get) and logs
# them at debug level when it finishes; the sum is the steady-state load on node 0's store.
# Then the arithmetic for 1024 nodes, for this scheme and for the one it replaced.
# Usage: bench/store_load.sh BUILD_DIR [SECONDS]
set -euo pipefail
build=${1:?usage: bench/store_load.sh BUILD_DIR [SECONDS]}
seconds=${2:-6}
hetrun="$build/bin/hetrun"
if [[ ! -e "$build/lib/libhetrun_rendezvous.so" ]]; then
  echo "store load: skipped ($build/lib/libhetrun_rendezvous.so not built: configured without libtorch)"
  exit 0
fi
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
echo "store requests per second during the run (heartbeat interval 1 s, 127.0.0.1, $(nproc) cores):"
for n in 4 8 16; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  pids=()
  for ((r = 0; r < n; r++)); do
    HETRUN_FAKE_GPUS="A100-SXM4-80GB:8.0:81049" HETRUN_TERMINATION_LOG=/dev/null HETRUN_LOG_LEVEL=debug \
      "$hetrun" run --nnodes "$n" --node-rank "$r" --nproc-per-node 1 --master-addr 127.0.0.1 \
      --master-port "$port" --rdzv-timeout 120s -- sleep "$seconds" >"$logs/$n.$r.log" 2>&1 &
    pids+=($!)
  done
  failed=0
  for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
  if ((failed > 0)); then
    echo "  $n launchers: $failed failed"; tail -5 "$logs/$n.0.log"; exit 1
  fi
  grep -ho "heartbeat: [0-9]* store requests in [0-9.]* s" "$logs"/$n.*.log |
    awk -v n="$n" '{req += $2; rate += $2 / $6} END {
      printf "  %2d launchers: %7.1f requests/s in all (%.2f per launcher; old scheme 2n-1 = %d per launcher)\n",
             n, rate, rate / n, 2 * n - 1 }'
done
echo "arithmetic for 1024 nodes at 1 beat/s: nodes > 0 send a beat and read node 0's record"
echo "  (1 set + check + get = 3 requests), node 0 reads 1023 beats (2 each) and writes one record:"
echo "  3 * 1023 + 2 * 1023 + 1 = $((3 * 1023 + 2 * 1023 + 1)) requests/s (5n - 4);"
echo "  the old scheme (every node reads every other node's beat): 1024 * (2 * 1023 + 1) = $((1024 * (2 * 1023 + 1))) requests/s"
