#!/usr/bin/env bash
# The size guide (scripts/file-sizes, docs/ARCHITECTURE.md §3) holds for the tree, and it can
# fail: with limits of 1 line and 1 file it must exit 1 naming files and folders over them.
set -uo pipefail
root=${1:?usage: check_file_sizes.sh SOURCE_DIR}
"$root/scripts/file-sizes" || exit 1
out=$("$root/scripts/file-sizes" --lines 1 --files 1 2>&1)
rc=$?
if [[ $rc -ne 1 ]] || ! grep -q 'launcher/main.cc: [0-9]* lines (limit 1)' <<<"$out" ||
   ! grep -q 'launcher/commands: [0-9]* source files (limit 1)' <<<"$out"; then
  echo "check_file_sizes: scripts/file-sizes --lines 1 --files 1 should exit 1 naming" \
       "launcher/main.cc and launcher/commands; it exited $rc:" >&2
  echo "$out" | head -20 >&2
  exit 1
fi
echo "check_file_sizes: the guide holds and fails on smaller limits"
