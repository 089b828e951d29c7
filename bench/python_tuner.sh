#!/usr/bin/env bash
# `make bench`, Python part: the tuner's per-step overhead (tuner.step() + tuner.loss()) and its
# per-window boundary (one all-gather), each as a share of examples/python/train_ddp.py's step
# time on 4 ranks under `hetrun run` (goal: < 0.5%). Figures only; nothing is asserted.
# Usage: bench/python_tuner.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: bench/python_tuner.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
py="$root/.venv/bin/python"
if ! "$py" -c "import hetrun" 2>/dev/null; then
  echo "python_tuner: the hetrun package is not installed in .venv (run scripts/setup)"; exit 1
fi
export PYTHONWARNINGS=ignore OMP_NUM_THREADS=1
# (Not `tee /dev/stderr`: with stderr redirected to a file, reopening it truncates that file.)
micro=$("$py" "$root/bench/python_tuner_bench.py")
printf '%s\n' "$micro"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/bin/hetrun" run --nproc-per-node 4 -- "$py" "$root/examples/python/train_ddp.py" \
  --steps 42 --batch 96 --summary "$work/summary" > "$work/log" 2>&1 || { cat "$work/log"; exit 1; }
rate=$(sed -n 's/^samples_per_s=//p' "$work/summary")
window=$(sed -n 's/^tuner_overhead=//p' "$work/summary")
step_us=$(sed -n 's/.*tuner overhead \([0-9.]*\) us per step/\1/p' <<<"$micro")
hook_us=$(sed -n 's/^DDP step.*: \(-*[0-9.]*\) us per step$/\1/p' <<<"$micro")
awk -v rate="$rate" -v us="$step_us" -v hook="$hook_us" -v w="$window" 'BEGIN {
  step_ms = 1000 * 96 / rate
  printf "train_ddp.py, 4 ranks, batch 96: %.1f ms per step (%.1f samples/s)\n", step_ms, rate
  printf "  per-step Python tuner path: %.2f us = %.4f%% of the step\n", us, 100 * us / 1000 / step_ms
  printf "  per-step with the DDP comm hook (step + loss + hook vs DDP alone): %.1f us = %.4f%% of the step\n", hook, 100 * hook / 1000 / step_ms
  printf "  per-window boundary + bookkeeping (report.tuner_overhead, windows 2..): %.4f%% of the window\n", 100 * w
}'
