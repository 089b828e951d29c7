#!/usr/bin/env bash
# Starts Megatron-LM on the split of this attempt (docs/how-to/replan-restart.md, "Megatron-LM and
# torchtitan"): hetrun run gives every worker of a pipeline layout HETRUN_MEGATRON_ARGS
# (--pipeline-model-parallel-size, --num-layers and --pipeline-model-parallel-layout, one
# argument a line), rendered from the layout the attempt runs: after a re-plan by restart, the
# split the workers recorded. This script appends them to the command and execs it, so the
# engine's exit code (82 to ask for a re-plan) reaches hetrun unchanged. Its own errors exit 2 or 1,
# codes hetrun passes through (64 and 78 are hetrun's own verdicts: from a worker they read as 1).
#
#   hetrun run --plan plan.json --replan-restart --checkpoint-dir /ckpt -- \
#     examples/launchers/hetrun-megatron.sh python pretrain_gpt.py --tensor-model-parallel-size 1 \
#       --load /ckpt --save /ckpt --ckpt-format torch_dist ...
#
# Exit: 2 without a command, or when the command already sets a flag the layout sets or replaces
# (docs/how-to/megatron.md, "The layout replaces other Megatron flags"); 1 when
# HETRUN_MEGATRON_ARGS is not set (hetrun's log says why a layout has none); else the engine's.
# tests/python/integrations/test_engine_wrappers.py runs it under hetrun run.
set -euo pipefail
me=${0##*/}
if (($# == 0)); then
  echo "$me: no command: give the engine's, e.g. python pretrain_gpt.py ARGS..." >&2
  exit 2
fi
if [[ -z ${HETRUN_MEGATRON_ARGS:-} ]]; then
  echo "$me: HETRUN_MEGATRON_ARGS is not set: run this under hetrun run with a pipeline layout" \
    "(--plan, or HETRUN_STAGE on every pod); hetrun logs why a layout gets none" >&2
  exit 1
fi
for arg in "$@"; do
  case ${arg%%=*} in
    --pipeline-model-parallel-size | --pipeline-model-parallel-layout | --num-layers | \
      --decoder-first-pipeline-num-layers | --decoder-last-pipeline-num-layers | \
      --account-for-embedding-in-pipeline-split | --account-for-loss-in-pipeline-split | \
      --num-layers-per-virtual-pipeline-stage | --num-virtual-stages-per-pipeline-rank)
      echo "$me: the command sets ${arg%%=*}, which HETRUN_MEGATRON_ARGS sets from the layout:" \
        "remove it" >&2
      exit 2
      ;;
  esac
done
mapfile -t layout_args <<<"${HETRUN_MEGATRON_ARGS%$'\n'}"
exec "$@" "${layout_args[@]}"
