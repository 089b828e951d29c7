#!/usr/bin/env bash
# Issue 39 item 12: does a Hugging Face Trainer client (HetrunTrainer, tune=False, Gloo, 3 ranks)
# abort at exit (SIGABRT, 134) after training succeeded? Runs tests/python/integrations/
# hf_worker.py RUNS times under hetrun run for each way of leaving (a normal interpreter exit,
# destroy_process_group() first, os._exit) and prints the exit codes it saw. Figures, no
# assertions. Usage: bench/hf_exit_aborts.sh BUILD_DIR   (HF_EXIT_RUNS, default 20;
# HF_EXIT_MODES, default "normal destroy")
set -uo pipefail
build=${1:?usage: bench/hf_exit_aborts.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
hetrun=${HETRUN:-$build/bin/hetrun}
python=${PYTHON:-$root/.venv/bin/python}
runs=${HF_EXIT_RUNS:-20}
modes=${HF_EXIT_MODES:-normal destroy}
[[ -x $hetrun ]] || { echo "hf_exit_aborts.sh: build $build first" >&2; exit 1; }
"$python" -c 'import transformers' 2>/dev/null || { echo "hf_exit_aborts.sh: no transformers in $python (skipped)"; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HETRUN_TERMINATION_LOG=$tmp/termination-log HETRUN_RUN_BASE=$tmp/runs OMP_NUM_THREADS=1
printf '%-8s %5s %6s %6s %6s  %s\n' exit runs ok abort other "codes (and rank stderr on abort)"
for mode in $modes; do
  ok=0 abort=0 other=0 codes=""
  for ((i = 0; i < runs; i++)); do
    out=$tmp/$mode-$i
    mkdir -p "$out"
    "$hetrun" run --standalone --nproc-per-node 3 --prefix-ranks -- "$python" \
      "$root/tests/python/integrations/hf_worker.py" --kind sample --batch 4 --accumulate 1 \
      --epoch-samples 48 --exit "$mode" --out "$out" >"$out/log" 2>&1
    code=$?
    codes+="$code "
    case $code in
      0) ok=$((ok + 1)) ;;
      134) abort=$((abort + 1)); cp "$out/log" "$tmp/abort-$mode.log" ;;
      *) other=$((other + 1)) ;;
    esac
  done
  printf '%-8s %5d %6d %6d %6d  %s\n' "$mode" "$runs" "$ok" "$abort" "$other" "$codes"
  if [[ -f $tmp/abort-$mode.log ]]; then
    grep -E "abort|terminate|Abort|what\(\)|SIGABRT" "$tmp/abort-$mode.log" | head -5 | sed 's/^/    /'
  fi
done
