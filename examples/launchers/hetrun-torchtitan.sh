#!/usr/bin/env bash
# Starts torchtitan on the split of this attempt (docs/how-to/replan-restart.md, "Megatron-LM and
# torchtitan"): hetrun run gives every worker of a pipeline layout HETRUN_TORCHTITAN_ARGS
# (--parallelism.pipeline_parallel_degree, --parallelism.pipeline_parallel_schedule and
# --parallelism.module_fqns_per_model_part with one comma list of module names a stage, one
# argument a line), rendered from the layout the attempt runs: after a re-plan by restart, the
# split the workers recorded. This script appends them to the command and execs it, so the
# engine's exit code (82 to ask for a re-plan) reaches hetrun unchanged. Its own errors exit 2 or 1,
# codes hetrun passes through (64 and 78 are hetrun's own verdicts: from a worker they read as 1). The batch flags
# (--parallelism.pipeline_parallel_microbatch_size, --training.local_batch_size) stay yours: a
# re-plan does not change them. Module names: hetrun run --torchtitan-names.
#
#   hetrun run --plan plan.json --replan-restart --checkpoint-dir /ckpt -- \
#     examples/launchers/hetrun-torchtitan.sh python -m torchtitan.train --module llama3 \
#       --config llama3_8b --checkpoint.enable --checkpoint.folder /ckpt ...
#
# Exit: 2 without a command, or when the command already sets a flag the layout sets; 1 when
# HETRUN_TORCHTITAN_ARGS is not set (hetrun's log says why a layout has none); else the engine's.
# tests/python/integrations/test_engine_wrappers.py runs it under hetrun run.
set -euo pipefail
me=${0##*/}
if (($# == 0)); then
  echo "$me: no command: give the engine's, e.g. python -m torchtitan.train ARGS..." >&2
  exit 2
fi
if [[ -z ${HETRUN_TORCHTITAN_ARGS:-} ]]; then
  echo "$me: HETRUN_TORCHTITAN_ARGS is not set: run this under hetrun run with a pipeline layout" \
    "(--plan, or HETRUN_STAGE on every pod); hetrun logs why a layout gets none" >&2
  exit 1
fi
for arg in "$@"; do
  name=${arg%%=*}
  case ${name//-/_} in  # tyro reads --a.b_c and --a.b-c alike
    __parallelism.pipeline_parallel_degree | __parallelism.pipeline_parallel_schedule | \
      __parallelism.module_fqns_per_model_part)
      echo "$me: the command sets $name, which HETRUN_TORCHTITAN_ARGS sets from the layout:" \
        "remove it" >&2
      exit 2
      ;;
  esac
done
mapfile -t layout_args <<<"${HETRUN_TORCHTITAN_ARGS%$'\n'}"
exec "$@" "${layout_args[@]}"
