#!/bin/sh
# A workstation with Open MPI: mpirun starts one hetrun per worker; each takes its rank from
# OMPI_COMM_WORLD_* and runs exactly that one worker (docs/tutorials/torchrun-to-hetrun.md). The launchers meet
# at node 0's store on MASTER_ADDR:MASTER_PORT (libtorch's TCPStore, loaded because the job has
# more than one launcher).
#
#   examples/launchers/mpirun.sh train.py --epochs 3        # NPROC=4 for four workers
#   MPIRUN_FLAGS="--oversubscribe --allow-run-as-root" ...   # more workers than cores, as root
#
# tests/mpi/launcher_examples_mpirun_test.cc runs this script for real.
set -eu
# shellcheck disable=SC2086  # MPIRUN_FLAGS is a list of flags
exec mpirun -np "${NPROC:-2}" ${MPIRUN_FLAGS:-} \
  -x MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}" -x MASTER_PORT="${MASTER_PORT:-29500}" \
  hetrun "$@"
