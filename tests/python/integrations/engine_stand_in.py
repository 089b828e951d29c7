"""A stand-in for Megatron-LM or torchtitan under examples/launchers/hetrun-{megatron,torchtitan}.sh
(test_engine_wrappers.py): it records the command line it was started with, and in attempt 0
plays the part of a trainer that cannot move layers live, the re-plan protocol of
docs/how-to/replan-restart.md: it records the split --move-to with hetrun.pipeline.record_move,
completes a checkpoint (rank 0 writes the .metadata DCP writes last into a new sub-folder and
publishes it in hetrun-latest; the others wait for that, as DCP's save and the publication return
on every rank once done) and exits 82. A later attempt exits 0."""

import argparse
import json
import os
import pathlib
import sys
import time

import hetrun.pipeline


def main():
    own = argparse.ArgumentParser()
    own.add_argument("--out", required=True)
    own.add_argument("--move-to", required=True, help="layers per stage after the re-plan: 4,4")
    args, engine_args = own.parse_known_args()
    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    rank = int(os.environ["RANK"])
    record = {"argv": engine_args, "stage_layers": os.environ["HETRUN_STAGE_LAYERS"],
              "stage": int(os.environ["HETRUN_STAGE"])}
    out = pathlib.Path(args.out)
    (out / f"argv.{attempt}.{rank}.json").write_text(json.dumps(record))
    if attempt > 0:
        return 0
    layout = hetrun.pipeline.load_job_layout(os.environ["HETRUN_PLAN"])
    moved = hetrun.pipeline.with_split(layout, [int(n) for n in args.move_to.split(",")])
    hetrun.pipeline.record_move(moved)
    checkpoints = pathlib.Path(os.environ["HETRUN_CHECKPOINT_DIR"])
    pointer = checkpoints / "hetrun-latest"
    if rank == 0:
        (checkpoints / "step-1").mkdir(parents=True, exist_ok=True)
        (checkpoints / "step-1" / ".metadata").write_text("complete\n")
        (checkpoints / ".hetrun-latest.tmp").write_text("step-1\n")
        os.replace(checkpoints / ".hetrun-latest.tmp", pointer)
    deadline = time.monotonic() + 60
    while not pointer.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return 82


if __name__ == "__main__":
    sys.exit(main())
