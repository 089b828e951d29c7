#!/usr/bin/env bash
# `make bench`, DeepSpeed part (Gloo on 127.0.0.1). Figures only, nothing asserted:
#  - overhead (bench/deepspeed_compare.py: a ZeRO engine loop, micro-batches of 64 256-token
#    samples through a small MLP, STEPS steps): plain DeepSpeed (--plain: equal slices, engine.backward) against DeepSpeed under
#    hetrun.integrations.deepspeed.ZeroBalance(tune=False) (the same equal split through its
#    sampler, clock and loss factor), 2 ranks, ZeRO-2: the slowest rank's median step time, the
#    best of four alternating rounds (goal: overhead <= 1%);
#  - balance: examples/python/train_deepspeed.py tuned against uniform on the emulated 4 x H100 +
#    2 x A100 node (the A100 ranks' time per sample stretched 3.17x), ZeRO-2 and ZeRO-3, each
#    run's efficiency against the ideal split (the tuner's report: the fitted optimum's compute
#    time / the slowest rank's; goal >= 0.95 on an idle machine), and ZeRO-3 with the whole step
#    stretched (what that emulation bounds);
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
# Four alternating rounds, each figure the best of its four: single runs of one mode spread by
# about 10% here, and noise from other processes only ever adds time.
rounds=4
for ((round = 1; round <= rounds; round++)); do
  for mode in plain no-tune; do
    train "$mode$round" 2 -- "$py" "$worker" --"$mode" --steps "$steps" --micro 64
  done
done
best() {
  local r
  for ((r = 1; r <= rounds; r++)); do get "$1$r" "$2"; done | sort -g | head -1
}
plain_ms=$(best plain step_ms_median)
tuner_ms=$(best no-tune step_ms_median)
gpus="H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,A100-SXM4-80GB:8.0:81049,A100-SXM4-80GB:8.0:81049"
# Balance: examples/python/train_deepspeed.py (the demo's tiny GPT, FSDP2's bench model), 42
# steps: 4 windows of 10 after 2 warm-up steps, the figure the mean of windows 3 and 4. The A100
# ranks are stretched per sample ("/sample": (3.17 - 1) x the rank's fitted time per sample
# added): DeepSpeed's per-step work on the host (ZeRO-3's parameter bookkeeping in forward and
# backward, a fixed cost of the step) is not the GPU's and runs as fast beside an A100. One
# ZeRO-3 run stretches the whole step instead ("whole"), to show what that emulation bounds.
trainer="$root/examples/python/train_deepspeed.py"
export HETRUN_EMULATE_SLOWDOWN="ampere=3.17/sample,hopper=1.0"
# The control: 6 emulated H100, nothing stretched, uniform shares: the even split is the ideal
# one, so its efficiency is the figure's bound on this machine (6 ranks time-sharing 2 cores).
h100x6="H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090"
for stage in 2 3; do
  train "tuned$stage" 6 --cpu-bind spread --fake-gpus "$gpus" -- "$py" "$trainer" \
    --stage "$stage" --steps 42
  train "uniform$stage" 6 --cpu-bind spread --fake-gpus "$gpus" -- "$py" "$trainer" \
    --stage "$stage" --steps 42 --no-tune
  train "control$stage" 6 --cpu-bind spread --fake-gpus "$h100x6" -- "$py" "$trainer" \
    --stage "$stage" --steps 42 --no-tune
done
HETRUN_EMULATE_SLOWDOWN="ampere=3.17,hopper=1.0" train whole3 6 --cpu-bind spread \
  --fake-gpus "$gpus" -- "$py" "$trainer" --stage 3 --steps 42
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
printf 'ZeRO-3 tuned with the whole step stretched (ampere=3.17): efficiency %.3f (per window %s), shares %s\n' \
  "$(get whole3 efficiency)" "$(get whole3 efficiency_windows)" "$(get whole3 shares_final)"
line+=$(printf ' zero3-whole-stretch %.3f' "$(get whole3 efficiency)")
echo "$line"
