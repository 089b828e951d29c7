#!/usr/bin/env bash
# `make bench`: hetrun's C++ data-parallel path side by side with PyTorch DDP from Python.
# The same TinyGpt (examples/trainer/tiny_gpt.cc; dim 512, 4 layers: 8.4 M parameters, 32 MiB of
# fp32 gradients, 2 buckets), the same equal shares (4 samples per rank, seq 32), SGD, Gloo on 127.0.0.1,
# 2 ranks, 25 MiB buckets on both sides (DDP's defaults: bucket_cap_mb 25,
# gradient_as_bucket_view False). Prints each side's median step time (the slowest rank's) and
# the memory the gradient exchange adds (peak RSS of the distributed steps minus the peak of one
# plain step on the bare model, the larger rank's; the same measure in both processes), then
#   ddp-compare: step-time-ratio R memory-ratio P      (hetrun / DDP)
# Figures only; nothing is asserted. Usage: bench/ddp_compare.sh BUILD_DIR [STEPS]
set -euo pipefail
build=${1:?usage: bench/ddp_compare.sh BUILD_DIR [STEPS]}
steps=${2:-14}
root=$(cd "$(dirname "$0")/.." && pwd)
py="$root/.venv/bin/python"
worker="$build/bench/ddp_compare_worker"
[[ -x $worker ]] || { echo "ddp_compare: $worker is not built (needs libtorch)"; exit 1; }
args=("$steps" 4 4 512 4 32 25)  # STEPS WARMUP BATCH_PER_RANK DIM LAYERS SEQ BUCKET_MIB
ranks=${DDP_COMPARE_RANKS:-2}
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# Runs RANKS copies of a command with the torchrun variables; prints their result lines.
run_ranks() {
  local port pids=() r out
  port=$(free_port)
  out=$(mktemp -d)
  for ((r = 0; r < ranks; ++r)); do
    RANK=$r WORLD_SIZE=$ranks LOCAL_RANK=$r LOCAL_WORLD_SIZE=$ranks MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port GLOO_SOCKET_IFNAME=lo OMP_NUM_THREADS=1 CUDA_VISIBLE_DEVICES= PYTHONWARNINGS=ignore \
      "$@" > "$out/$r" 2> "$out/$r.err" &
    pids+=($!)
  done
  for ((r = 0; r < ranks; ++r)); do
    wait "${pids[$r]}" || { echo "ddp_compare: rank $r of '$*' failed:" >&2; cat "$out/$r.err" >&2; exit 1; }
  done
  grep -h '^ddp-compare-rank' "$out"/[0-9]*
  rm -rf "$out"
}
# The slowest rank's step time and the larger rank's added memory.
summarize() { awk '{ if ($4 > t) t = $4; if ($6 > m) m = $6 } END { printf "%.2f %d\n", t, m }'; }
ours=$(run_ranks "$worker" "${args[@]}")
theirs=$(run_ranks "$py" "$root/bench/ddp_compare_ddp.py" "${args[@]}")
echo "$ours" | sed 's/^/hetrun   /'
echo "$theirs" | sed 's/^/ddp      /'
read -r ours_ms ours_kib <<<"$(summarize <<<"$ours")"
read -r ddp_ms ddp_kib <<<"$(summarize <<<"$theirs")"
awk -v a="$ours_ms" -v b="$ddp_ms" -v c="$ours_kib" -v d="$ddp_kib" -v n="$ranks" 'BEGIN {
  printf "hetrun GradientReducer: %.1f ms per step, +%.1f MiB (%d ranks, Gloo)\n", a, c / 1024, n
  printf "PyTorch DDP:            %.1f ms per step, +%.1f MiB\n", b, d / 1024
  printf "ddp-compare: step-time-ratio %.3f memory-ratio %.3f\n", a / b, (d > 0 ? c / d : 0)
}'
