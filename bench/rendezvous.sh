#!/usr/bin/env bash
# Rendezvous time of 16 hetrun launchers on this machine (127.0.0.1, fake mixed inventories):
# the time each launcher reports from opening the store to holding every node's record, and the
# wall time from starting all 16 to all 16 having run a trivial worker. Prints figures only.
# Usage: bench/rendezvous.sh BUILD_DIR [LAUNCHERS]
set -euo pipefail
build=${1:?usage: bench/rendezvous.sh BUILD_DIR [LAUNCHERS]}
n=${2:-16}
hetrun="$build/bin/hetrun"
if [[ ! -e "$build/lib/libhetrun_rendezvous.so" ]]; then
  echo "rendezvous: skipped ($build/lib/libhetrun_rendezvous.so not built: configured without libtorch)"
  exit 0
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
logs=$(mktemp -d)
trap '[[ -n "${KEEP_LOGS:-}" ]] || rm -rf "$logs"' EXIT
gpus=("A100-SXM4-80GB:8.0:81049" "H100-SXM5-80GB:9.0:81090" "H200:9.0:143360")
start=$(date +%s%N)
pids=()
for ((r = 0; r < n; r++)); do
  HETRUN_FAKE_GPUS=${gpus[r % 3]} HETRUN_TERMINATION_LOG=/dev/null \
    "$hetrun" run --nnodes "$n" --node-rank "$r" --nproc-per-node 1 --master-addr 127.0.0.1 \
    --master-port "$port" --rdzv-timeout 120s -- true >"$logs/$r.log" 2>&1 &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
end=$(date +%s%N)
if ((failed > 0)); then
  echo "rendezvous: $failed of $n launchers failed; node 0's log:"
  cat "$logs/0.log"; for f in "$logs"/*.log; do grep -L "every worker succeeded" "$f" | xargs -r tail -5; done
  exit 1
fi
ms=$(grep -ho "$n nodes in [0-9]* ms" "$logs"/*.log | awk '{print $4}' | sort -n)
echo "rendezvous of $n launchers (127.0.0.1, $(nproc) cores):"
echo "  exec -> every record (library load, connect, join), per launcher: min $(echo "$ms" | head -1) ms, median $(echo "$ms" | sed -n "$(((n + 1) / 2))p") ms, max $(echo "$ms" | tail -1) ms"
load=$(grep -ho "library load and connect [0-9]* ms" "$logs"/*.log | awk '{print $5}' | sort -n)
echo "  of which dlopen(libhetrun_rendezvous.so + libtorch_cpu) and connect: median $(echo "$load" | sed -n "$(((n + 1) / 2))p") ms, max $(echo "$load" | tail -1) ms"
echo "  start of all $n -> all $n done (worker: true): $(((end - start) / 1000000)) ms"
