#!/usr/bin/env bash
# Runs every benchmark of a release build and prints the figures: `make bench`.
# Usage: bench/run.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: bench/run.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
status=0
for b in "$build"/bench/*_bench; do
  [[ -x $b ]] || continue
  echo "== $(basename "$b")"
  "$b" --benchmark_counters_tabular=true || status=1
done
# The re-balancer under noisy stage times (deterministic seeds; prints its table).
if [[ -x $build/bench/rebalance_noise ]]; then
  echo "== rebalance_noise"
  "$build/bench/rebalance_noise" || status=1
fi
# The tuner's pooling against card-to-card spread, 512 ranks, 5% noise (prints its table).
if [[ -x $build/bench/pool_spread ]]; then
  echo "== pool_spread"
  "$build/bench/pool_spread" 512 3 || status=1
fi
for s in "$here"/*.sh; do
  [[ $(basename "$s") == run.sh ]] && continue
  echo "== $(basename "$s")"
  bash "$s" "$build" || status=1
done
exit $status
