"""Re-plan by restart for hetrun.pipelining (replan="restart"; docs/how-to/python-pipelines.md):
on a move decision every rank saves a torch.distributed.checkpoint (DCP) checkpoint of its stage
(the full model's module names, the optimizer state flattened so that DCP can reshard it onto
another split, the step and this rank's RNG state), records the new split with record_move and
exits 82 (re-plan requested). A restarted job on the recorded layout loads the checkpoint onto
its new stages. The checkpoint is complete when its `.metadata` exists (DCP writes it last)."""

from __future__ import annotations

import os
from typing import Optional

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_state_dict,
                                                     set_state_dict)

EXIT_REPLAN = 82  # the one exit-code table's "re-plan requested"
_OPTIONS = StateDictOptions(flatten_optimizer_state_dict=True)


class ReplanRequested(SystemExit):
    """Raised on every rank after the checkpoint is saved and the new split recorded: exits the
    process with 82 unless the trainer catches it (to write its own figures first)."""

    def __init__(self, split) -> None:
        super().__init__(EXIT_REPLAN)
        self.split = list(split)


def complete(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, ".metadata"))


def _state(module, optimizer, step: int) -> dict:
    model_sd, optim_sd = get_state_dict(module, optimizer, options=_OPTIONS)
    return {"model": model_sd, "optim": optim_sd, "step": torch.tensor(step),
            f"rng.rank{dist.get_rank()}": torch.get_rng_state()}


def save(directory: str, module, optimizer, step: int) -> None:
    """Every rank: the stage's checkpoint into `directory`; an older checkpoint there stops
    looking complete first (rank 0 removes its .metadata), so a save cut short is never read."""
    if dist.get_rank() == 0:
        os.makedirs(directory, exist_ok=True)
        if complete(directory):
            os.unlink(os.path.join(directory, ".metadata"))
    dist.barrier()
    dcp.save(_state(module, optimizer, step), checkpoint_id=directory)
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
    """Every rank: loads its new stage from the checkpoint; returns the step to resume at."""
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
