#!/usr/bin/env bash
# Scanning a large library for fatbin containers in its data sections (issue 37): wall time and
# peak RSS of `hetrun inspect` and `hetrun check` on the venv's libcufft.so.12 (274 MiB, 23,983
# containers in .ldata) when present, and on a synthetic 300 MiB file (bench/make_ldata_file.py:
# one-image containers among random bytes that carry lookalike magics). Figures only.
# Usage: bench/fatbin_scan.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: bench/fatbin_scan.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
hetrun=$build/bin/hetrun
cufft=$here/../.venv/lib/python3.11/site-packages/nvidia/cu13/lib/libcufft.so.12
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/make_ldata_file.py" "$tmp/libsynthetic_ldata.so" 300
libs=("$tmp/libsynthetic_ldata.so")
if [[ -f $cufft ]]; then libs=("$cufft" "${libs[@]}"); else echo "(no libcufft.so.12 in .venv)"; fi
measure() {  # measure LABEL CMD...: prints wall seconds and peak RSS
  local label=$1; shift
  local log; log=$(mktemp)
  local rc=0
  /usr/bin/time -v "$@" >/dev/null 2>"$log" || rc=$?
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  rm -f "$log"
  printf '  %-34s wall %-9s peak RSS %6d MiB (exit %d)\n' "$label" "$wall" $((rss / 1024)) "$rc"
}
for lib in "${libs[@]}"; do
  echo "== $(basename "$lib") ($(($(stat -c %s "$lib") / 1048576)) MiB)"
  cat "$lib" >/dev/null  # warm page cache
  measure "hetrun inspect" "$hetrun" inspect "$lib"
  measure "hetrun inspect --json" "$hetrun" inspect --json "$lib"
  measure "hetrun check --target-arch 8.0,9.0" "$hetrun" check --target-arch 8.0,9.0 --scan "$lib"
done
