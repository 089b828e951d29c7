#!/usr/bin/env bash
# Image CI smoke test: do the CUDA binaries in this image cover every GPU generation the cluster
# has? Runs `hetrun check --target-arch 8.0,9.0 --torch --scan DIR...` and fails on exit 80
# (a kernel image is missing for a target), before any pod meets an A100 with an sm_90-only build.
#
#   smoke-test.sh [DIR...]          directories of extensions/libraries to scan (default:
#                                    $SMOKE_SCAN_DIRS, else /opt/venv/lib)
# Environment:
#   HETRUN           the hetrun binary (default: hetrun on PATH, else /opt/hetrun/bin/hetrun)
#   SMOKE_TARGETS    compute capabilities to require (default 8.0,9.0)
#   SMOKE_TORCH      1 (default): also check the installed torch (--torch); 0: skip it
#   SMOKE_TORCH_LIB  a torch lib/ directory: --torch-lib DIR instead of --torch (no Python needed)
#   SMOKE_SCAN_DIRS  colon-separated default directories
# Exit: 0 every target covered; 80 a target missing; other codes are hetrun check's own
# (64 usage, 78 configuration) or 2 for this script's usage errors.
set -uo pipefail

say() { printf 'smoke-test: %s\n' "$*" >&2; }

hetrun=${HETRUN:-}
if [[ -z $hetrun ]]; then
  if command -v hetrun >/dev/null 2>&1; then
    hetrun=$(command -v hetrun)
  else
    hetrun=/opt/hetrun/bin/hetrun
  fi
fi
if [[ ! -x $hetrun ]]; then
  say "hetrun binary '$hetrun' is not executable (set HETRUN)"
  exit 2
fi

targets=${SMOKE_TARGETS:-8.0,9.0}
args=(check --target-arch "$targets")
case ${SMOKE_TORCH:-1} in
  1) [[ -z ${SMOKE_TORCH_LIB:-} ]] && args+=(--torch) ;;
  0) ;;
  *) say "SMOKE_TORCH must be 0 or 1, got '${SMOKE_TORCH}'"; exit 2 ;;
esac
if [[ -n ${SMOKE_TORCH_LIB:-} ]]; then
  if [[ ! -d $SMOKE_TORCH_LIB ]]; then
    say "SMOKE_TORCH_LIB '$SMOKE_TORCH_LIB' is not a directory"
    exit 2
  fi
  args+=(--torch-lib "$SMOKE_TORCH_LIB")
fi

dirs=("$@")
if ((${#dirs[@]} == 0)); then
  IFS=: read -r -a dirs <<<"${SMOKE_SCAN_DIRS:-/opt/venv/lib}"
fi
for dir in "${dirs[@]}"; do
  [[ -z $dir ]] && continue
  if [[ ! -d $dir ]]; then
    say "scan directory '$dir' does not exist"
    exit 2
  fi
  args+=(--scan "$dir")
done

say "$hetrun ${args[*]}"
"$hetrun" "${args[@]}"
rc=$?
case $rc in
  0) say "PASS: every CUDA binary covers $targets" ;;
  80) say "FAIL: a kernel image is missing for one of $targets (exit 80); rebuild with" \
          "TORCH_CUDA_ARCH_LIST=\"8.0;9.0+PTX\"" ;;
  *) say "FAIL: hetrun check exited $rc" ;;
esac
exit "$rc"
