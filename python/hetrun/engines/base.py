"""What hetrun.Tuner needs from a data-parallel engine (docs/ARCHITECTURE.md §5.2, §5.8).

The tuner is engine-agnostic: it decides shares, scales losses and closes windows. An engine
knows how its gradients are reduced and so where a rank's compute ends and its waiting begins:
`ddp.DdpEngine` (a DistributedDataParallel module), `fsdp.FsdpEngine` (a fully_shard root) and
`plain.PlainEngine` (no model=: the user's step() block ends before any collective), each a
subclass of `Engine` here. This module imports no engine; hetrun._tuner picks one. The
stock-trainer integrations build on the same engines."""

from __future__ import annotations

from typing import List, Optional, Tuple

import torch

from hetrun._timing import CudaIntervalClock, CudaStepClock


class Engine:
    """The interface. group: the process group the gradients are reduced over (None: WORLD)."""

    name = "plain"
    #: whether every rank must run the same number of micro-batches per step (FSDP2: each
    #: micro-batch's forward all-gathers, so a rank that runs one more deadlocks)
    lockstep_micro_batches = False
    group = None

    def setup(self, device: torch.device, slowdown: float, group_size: int,
              reduction: str) -> None:
        """Called once by the tuner, after the group and the device are known."""

    def begin_step(self, samples: int) -> None:
        raise NotImplementedError

    def end_step(self) -> Tuple[List[Tuple[int, float]], float]:
        """([(samples, compute_ms)] of the steps whose timing completed, wait_ms of this one)."""
        raise NotImplementedError

    def set_slowdown(self, factor: float, per_sample: float = 1.0) -> None:
        """HETRUN_EMULATE_SLOWDOWN's factors from this step on (a rankN=k@stepS entry starting):
        CPU clocks stretch each compute region by the whole-region `factor` and its per-sample
        part by `per_sample` (hetrun/job/compute_stretch.h); GPU clocks ignore both."""
        clock = getattr(self, "_clock", None)
        if clock is not None and not isinstance(clock, (CudaStepClock, CudaIntervalClock)):
            clock.set_factors(factor, per_sample)

    def check_step(self, step_index: int) -> None:
        """Validation that needs a step to have run (FSDP2 picks its root at the first forward)."""

    def mark_compute_end(self) -> None:
        """Tuner.mark_compute_end(): only without model=, whose engine has no hook of its own."""
        raise RuntimeError(f"hetrun.Tuner.mark_compute_end(): the {self.name} engine's own hook "
                           f"ends the compute region; call it only on a tuner without model=")


def optional_group_ranks(group) -> Optional[list]:
    import torch.distributed as dist

    ranks = getattr(dist, "get_process_group_ranks", None)
    return ranks(group) if ranks else None
