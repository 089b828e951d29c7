#!/usr/bin/env bash
# `make bench`, DeepSpeed part (bench/deepspeed_compare.py: a ZeRO engine loop, 256-token samples
# through a small MLP, Gloo on 127.0.0.1). Figures only, nothing asserted:
#  - overhead: plain DeepSpeed (--plain: equal slices, engine.backward) against DeepSpeed under
#    hetrun.integrations.deepspeed.ZeroBalance(tune=False) (the same equal split through its
#    sampler, clock and loss factor), 2 ranks, ZeRO-2: the slowest rank's median step time, the
#    better of two alternating rounds (goal: overhead <= 1%);
#  - balance: tuned against uniform on the emulated 4 x H100 + 2 x A100 node (the A100 ranks'
#    compute stretched 3.17x), ZeRO-2 and ZeRO-3, each run's efficiency against the ideal split
#    (the tuner's report: the fitted optimum's compute time / the slowest rank's; goal >= 0.95).
#  - control: 6 emulated H100 with uniform shares (the even split is ideal there): the efficiency
#    this machine's timing lets the figure reach, the bound for the tuned runs.
# Prints `deepspeed-compare: overhead-ratio R zero2-tuned E zero2-uniform U zero2-control C zero3-...`.
# Needs DeepSpeed in .venv (scripts/setup). Usage: bench/deepspeed_compare.sh BUILD_DIR [STEPS]
set -euo pipefail
build=${1:?usage: bench/deepspeed_compare.sh BUILD_DIR [STEPS]}
steps=${2:-30}
root=$(cd "$(dirname "$0")/.." && pwd)
py="$root/.venv/bin/python"
hetrun="$build/bin/hetrun"
if ! "$py" -c "import hetrun, deepspeed" >/dev/null 2>&1; then
  echo "deepspeed_compare: hetrun or deepspeed is not installed in .venv (run scripts/setup)"
  exit 1
fi
export PYTHONWARNINGS=ignore OMP_NUM_THREADS=1
worker="$root/bench/deepspeed_compare.py"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
label=deepspeed_compare
# shellcheck source=bench/lib/compare_runs.sh
. "$root/bench/lib/compare_runs.sh"
for round in 1 2; do
  for mode in plain no-tune; do
    train "$mode$round" 2 -- "$py" "$worker" --"$mode" --steps "$steps"
  done
done
best() { awk -v a="$(get "${1}1" "$2")" -v b="$(get "${1}2" "$2")" 'BEGIN { print (a < b ? a : b) }'; }
plain_ms=$(best plain step_ms_median)
tuner_ms=$(best no-tune step_ms_median)
gpus="H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,A100-SXM4-80GB:8.0:81049,A100-SXM4-80GB:8.0:81049"
export HETRUN_EMULATE_SLOWDOWN="ampere=3.17,hopper=1.0"
# The control: 6 emulated H100, nothing stretched, uniform shares: the even split is the ideal
# one, so its efficiency is the figure's bound on this machine (6 ranks time-sharing 2 cores).
h100x6="H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090"
for stage in 2 3; do
  train "tuned$stage" 6 --cpu-bind spread --fake-gpus "$gpus" -- "$py" "$worker" \
    --stage "$stage" --steps "$steps"
  train "uniform$stage" 6 --cpu-bind spread --fake-gpus "$gpus" -- "$py" "$worker" \
    --stage "$stage" --steps "$steps" --no-tune
  train "control$stage" 6 --cpu-bind spread --fake-gpus "$h100x6" -- "$py" "$worker" \
    --stage "$stage" --steps "$steps" --no-tune
done
printf 'plain DeepSpeed ZeRO-2:             %.1f ms per step (2 ranks, Gloo)\n' "$plain_ms"
printf 'ZeroBalance(tune=False) ZeRO-2:     %.1f ms per step\n' "$tuner_ms"
line="deepspeed-compare: overhead-ratio $(awk -v p="$plain_ms" -v t="$tuner_ms" 'BEGIN { printf "%.3f", t / p }')"
for stage in 2 3; do
  printf 'emulated 4 x H100 + 2 x A100, ZeRO-%s: tuned %.1f samples/s (efficiency %.3f, shares %s), uniform %.1f samples/s (efficiency %.3f)\n' \
    "$stage" "$(get "tuned$stage" samples_per_s)" "$(get "tuned$stage" efficiency)" \
    "$(get "tuned$stage" shares_final)" "$(get "uniform$stage" samples_per_s)" \
    "$(get "uniform$stage" efficiency)"
  printf '  tuned efficiency per window: %s; control (6 x H100 uniform, the bound here): %.3f\n' \
    "$(get "tuned$stage" efficiency_windows)" "$(get "control$stage" efficiency)"
  line+=$(printf ' zero%s-tuned %.3f zero%s-uniform %.3f zero%s-control %.3f' \
    "$stage" "$(get "tuned$stage" efficiency)" "$stage" "$(get "uniform$stage" efficiency)" \
    "$stage" "$(get "control$stage" efficiency)")
done
echo "$line"
