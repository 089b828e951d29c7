#!/usr/bin/env bash
# Launch overhead: hetrun vs torchrun starting 2 workers of /bin/true on one node.
#   exec -> first worker running: the launcher execs a worker that records its start time.
#   total wall time: launch 2 workers of /bin/true and wait for the launcher to exit.
# Prints figures side by side and the ratio; asserts nothing. Usage: bench/launch.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: bench/launch.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
hetrun=$build/bin/hetrun
torchrun=${TORCHRUN:-$here/../.venv/bin/torchrun}
runs=${LAUNCH_BENCH_RUNS:-10}
[[ -x $hetrun ]] || { echo "launch.sh: $hetrun not built" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A worker that writes the time it started (ns since the epoch) and exits.
cat >"$tmp/stamp.sh" <<'SH'
#!/bin/sh
date +%s%N >"$STAMP_DIR/$RANK"
SH
chmod +x "$tmp/stamp.sh"

now_ns() { date +%s%N; }

# measure NAME CMD...: median exec->first-worker and total wall time (ms) over $runs runs.
measure() {
  local name=$1; shift
  local firsts=() totals=()
  for ((i = 0; i < runs; i++)); do
    rm -f "$tmp"/stamps/*; mkdir -p "$tmp/stamps"
    local start end first
    start=$(now_ns)
    STAMP_DIR=$tmp/stamps "$@" -- "$tmp/stamp.sh" >/dev/null 2>&1
    first=$(sort -n "$tmp"/stamps/* | head -1)
    firsts+=($(( (first - start) / 1000 )))
    start=$(now_ns)
    "$@" -- /bin/true >/dev/null 2>&1
    end=$(now_ns)
    totals+=($(( (end - start) / 1000 )))
  done
  local first_med total_med
  first_med=$(printf '%s\n' "${firsts[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  total_med=$(printf '%s\n' "${totals[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  printf '%-10s exec->first worker %8.1f ms   total (2 x /bin/true) %8.1f ms\n' "$name" \
    "$(echo "$first_med / 1000" | bc -l)" "$(echo "$total_med / 1000" | bc -l)"
  eval "${name}_first=$first_med ${name}_total=$total_med"
}

echo "median of $runs runs, 2 workers on one node"
measure hetrun "$hetrun" run --nproc-per-node 2
# torchrun takes the script without a "--"; wrap it so both get the same call shape.
torchrun_call() {
  shift_args=()
  for a in "$@"; do [[ $a == -- ]] || shift_args+=("$a"); done
  "$torchrun" --nproc-per-node 2 --standalone --no-python "${shift_args[@]}"
}
if [[ -x $torchrun ]]; then
  measure torchrun torchrun_call
  printf 'ratio torchrun/hetrun: exec->first worker %.1fx, total %.1fx\n' \
    "$(echo "$torchrun_first / $hetrun_first" | bc -l)" \
    "$(echo "$torchrun_total / $hetrun_total" | bc -l)"
else
  echo "torchrun: skipped ($torchrun not found; run scripts/setup to create the venv)"
fi
