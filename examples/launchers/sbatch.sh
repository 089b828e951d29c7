#!/bin/bash
# Slurm: one hetrun per node (srun --ntasks-per-node=1), each starting the node's 8 workers and
# supervising them; the launchers meet at node 0's store (the allocation's first host).
#
#   sbatch examples/launchers/sbatch.sh /workspace/train.py --epochs 3
#
# tests/mpi/launcher_examples_test.cc checks the script (bash -n) and runs its srun line with
# SRUN pointing at a stand-in that adds --dry-run, under a 2-node allocation's variables.
#SBATCH --job-name=hetrun-train
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=64
#SBATCH --time=24:00:00
set -euo pipefail

MASTER_ADDR=${MASTER_ADDR:-$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)}
MASTER_PORT=${MASTER_PORT:-29500}
# hetrun's exit code (64 usage, 75 transient, 78 configuration, 80 kernel images, 81 memory;
# `hetrun exit-codes`) is the step's: requeue on 75 if you like (scontrol requeue).
${SRUN:-srun} --ntasks-per-node=1 --kill-on-bad-exit=1 \
  hetrun --nnodes "$SLURM_NNODES" --node-rank "$SLURM_NODEID" --nproc-per-node 8 \
  --master-addr "$MASTER_ADDR" --master-port "$MASTER_PORT" --run-id "slurm-$SLURM_JOB_ID" \
  "$@"
