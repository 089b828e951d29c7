"""Re-plan by restart for hetrun.pipelining (replan="restart"; docs/how-to/python-pipelines.md):
on a move decision every rank saves a torch.distributed.checkpoint (DCP) checkpoint of its stage
(the full model's module names, the optimizer state flattened so that DCP can reshard it onto
another split, the step and this rank's RNG state), records the new split with record_move and
exits 82 (re-plan requested). A restarted job on the recorded layout loads the checkpoint onto
its new stages.

The layout under the checkpoint folder DIR (docs/how-to/replan-restart.md; hetrun's launcher
checks the same, launcher/supervise/watchers/checkpoint_pointer.h): every save goes into a new
sub-folder, DIR/step-<step>-<8 hex digits>; once every rank's part is written (DCP writes its
`.metadata` last), rank 0 publishes it by replacing DIR/hetrun-latest atomically with the
sub-folder's name, then removes the older step-* sub-folders. A save cut short leaves the
previous checkpoint published and loadable."""

from __future__ import annotations

import os
import re
import secrets
import shutil
from typing import Optional

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_state_dict,
                                                     set_state_dict)

EXIT_REPLAN = 82  # the one exit-code table's "re-plan requested"
_OPTIONS = StateDictOptions(flatten_optimizer_state_dict=True)
POINTER = "hetrun-latest"  #: DIR's file naming the last complete checkpoint's sub-folder
_SAVE_NAME = re.compile(r"step-[0-9]+-[0-9a-f]{8}")


class ReplanRequested(SystemExit):
    """Raised on every rank after the checkpoint is saved and the new split recorded: exits the
    process with 82 unless the trainer catches it (to write its own figures first)."""

    def __init__(self, split) -> None:
        super().__init__(EXIT_REPLAN)
        self.split = list(split)


def latest(directory: str) -> Optional[str]:
    """The sub-folder of the last complete checkpoint that DIR/hetrun-latest names; None when
    there is none (no pointer, a name that is no sub-folder, or one without DCP's .metadata)."""
    try:
        fd = os.open(os.path.join(directory, POINTER), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        name = os.read(fd, 4096).decode(errors="replace").split("\n", 1)[0].strip()
    finally:
        os.close(fd)
    if not name or name in (".", "..") or "/" in name:
        return None
    path = os.path.join(directory, name)
    return path if os.path.isfile(os.path.join(path, ".metadata")) else None


def complete(directory: str) -> bool:
    return latest(directory) is not None


def _publish(directory: str, name: str) -> None:
    """Rank 0, once every rank's part is written: DIR/hetrun-latest names `name` (a private
    temporary renamed over it), then the older step-* sub-folders go."""
    tmp = os.path.join(directory, f".{POINTER}.tmp.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        os.write(fd, (name + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, os.path.join(directory, POINTER))
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    for entry in os.listdir(directory):
        if entry != name and _SAVE_NAME.fullmatch(entry):
            shutil.rmtree(os.path.join(directory, entry), ignore_errors=True)


def _state(module, optimizer, step: int) -> dict:
    model_sd, optim_sd = get_state_dict(module, optimizer, options=_OPTIONS)
    return {"model": model_sd, "optim": optim_sd, "step": torch.tensor(step),
            f"rng.rank{dist.get_rank()}": torch.get_rng_state()}


def save(directory: str, module, optimizer, step: int) -> None:
    """Every rank: the stage's checkpoint into a new sub-folder of `directory` (its name chosen
    by rank 0), published by rank 0 once every rank's part is written; every rank returns after
    that, so an 82 that follows always finds it published."""
    name = [f"step-{step}-{secrets.token_hex(4)}" if dist.get_rank() == 0 else None]
    if dist.get_rank() == 0:
        os.makedirs(directory, exist_ok=True)
    dist.broadcast_object_list(name, src=0)
    dcp.save(_state(module, optimizer, step), checkpoint_id=os.path.join(directory, name[0]))
    dist.barrier()
    if dist.get_rank() == 0:
        _publish(directory, name[0])
    dist.barrier()


def _check_keys(directory: str, state: dict) -> None:
    """ValueError naming the first key of this stage that the checkpoint lacks (a checkpoint of
    another model), before DCP fails on it."""
    stored = dcp.FileSystemReader(directory).read_metadata().state_dict_metadata
    for prefix in ("model", "optim"):
        for key in state[prefix]:
            if f"{prefix}.{key}" not in stored:
                raise ValueError(f"hetrun.pipelining: checkpoint {directory} has no {prefix} "
                                 f"entry {key!r}: it is not a checkpoint of this model")


def load(directory: str, module, optimizer) -> int:
    """Every rank: loads its new stage from the checkpoint in `directory` (the sub-folder latest()
    returned); returns the step to resume at."""
    state = _state(module, optimizer, 0)
    _check_keys(directory, state)
    rng_key = f"rng.rank{dist.get_rank()}"
    stored = dcp.FileSystemReader(directory).read_metadata().state_dict_metadata
    if rng_key not in stored:  # a rank the saving job did not have keeps its own RNG state
        del state[rng_key]
    dcp.load(state, checkpoint_id=directory)
    set_state_dict(module, optimizer, model_state_dict=state["model"],
                   optim_state_dict=state["optim"], options=_OPTIONS)
    if rng_key in state:
        torch.set_rng_state(state[rng_key])
    return int(state["step"])


def checkpoint_dir(given: Optional[str]) -> str:
    """checkpoint_dir= as given, else HETRUN_CHECKPOINT_DIR (`hetrun run --checkpoint-dir`)."""
    directory = given or os.environ.get("HETRUN_CHECKPOINT_DIR", "")
    if not directory:
        raise ValueError('hetrun.pipelining: replan="restart" needs checkpoint_dir= or '
                         "HETRUN_CHECKPOINT_DIR (hetrun run --checkpoint-dir): a folder every "
                         "rank can reach, shared storage across nodes")
    return directory
