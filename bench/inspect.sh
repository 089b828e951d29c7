#!/usr/bin/env bash
# `hetrun inspect` wall time and peak memory on big real libraries (the toolkit's libnccl.so.2,
# the venv's libtorch_cuda.so), side by side with a read-the-section-and-walk Python baseline.
# Usage: bench/inspect.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: bench/inspect.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
hetrun=$build/bin/hetrun
libs=(/usr/local/cuda/lib64/libnccl.so.2
      "$here/../.venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so")
measure() {  # measure LABEL CMD...: prints wall seconds and peak RSS
  local label=$1; shift
  local log; log=$(mktemp)
  /usr/bin/time -v "$@" >/dev/null 2>"$log" || { echo "$label: failed"; cat "$log"; rm -f "$log"; return 1; }
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  rm -f "$log"
  printf '  %-22s wall %-9s peak RSS %6d MiB\n' "$label" "$wall" $((rss / 1024))
}
for lib in "${libs[@]}"; do
  [[ -f $lib ]] || { echo "== $(basename "$lib"): not present, skipped"; continue; }
  echo "== $(basename "$lib") ($(($(stat -c %s "$lib") / 1048576)) MiB)"
  cat "$lib" >/dev/null  # warm page cache for both contenders
  measure "hetrun inspect" "$hetrun" inspect "$lib"
  measure "hetrun inspect --json" "$hetrun" inspect --json "$lib"
  measure "python baseline" python3 "$here/inspect_baseline.py" "$lib"
done
