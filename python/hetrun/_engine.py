"""What hetrun.Tuner needs from a data-parallel engine (docs/ARCHITECTURE.md §5.2, §5.8).

The tuner is engine-agnostic: it decides shares, scales losses and closes windows. An engine
knows how its gradients are reduced and so where a rank's compute ends and its waiting begins:
`_ddp.DdpEngine` (a DistributedDataParallel module), `_fsdp.FsdpEngine` (a fully_shard root),
and `PlainEngine` here (no model=: the user's step() block ends before any collective). The
stock-trainer integrations build on the same engines."""

from __future__ import annotations

from typing import List, Optional, Tuple

import torch

from hetrun._timing import CpuStepClock, CudaIntervalClock, CudaStepClock


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

    def set_slowdown(self, factor: float) -> None:
        """HETRUN_EMULATE_SLOWDOWN's factor from this step on (a rankN=k@stepS entry starting):
        CPU clocks stretch each compute interval by it; GPU clocks ignore it."""
        clock = getattr(self, "_clock", None)
        if clock is not None and not isinstance(clock, (CudaStepClock, CudaIntervalClock)):
            clock.slowdown = factor

    def check_step(self, step_index: int) -> None:
        """Validation that needs a step to have run (FSDP2 picks its root at the first forward)."""

    def mark_compute_end(self) -> None:
        """Tuner.mark_compute_end(): only without model=, whose engine has no hook of its own."""
        raise RuntimeError(f"hetrun.Tuner.mark_compute_end(): the {self.name} engine's own hook "
                           f"ends the compute region; call it only on a tuner without model=")


class PlainEngine(Engine):
    """No model=: the region is the whole step() block (the user reduces after it)."""

    def __init__(self, group) -> None:
        self.group = group
        self._clock = None

    def setup(self, device: torch.device, slowdown: float, group_size: int,
              reduction: str) -> None:
        self._clock = CudaStepClock(device) if device.type == "cuda" else CpuStepClock(slowdown)

    def begin_step(self, samples: int) -> None:
        self._clock.start(samples)

    def mark_compute_end(self) -> None:
        if not self._clock.compute_ended:
            self._clock.mark_compute_end()

    def end_step(self) -> Tuple[List[Tuple[int, float]], float]:
        if not self._clock.compute_ended:
            self._clock.mark_compute_end()
        return self._clock.finish(), 0.0


def engine_for(model, group) -> Engine:
    """The engine for Tuner(model=...): ValueError names what was given when it is none."""
    if model is None:
        return PlainEngine(group)
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        from hetrun._ddp import DdpEngine

        return DdpEngine(model, group)
    from hetrun import _fsdp

    if _fsdp.is_fsdp1(model):
        raise ValueError("hetrun.Tuner: model= is an FSDP1 FullyShardedDataParallel module; the "
                         "tuner supports FSDP2 (torch.distributed.fsdp.fully_shard) and "
                         "DistributedDataParallel")
    if _fsdp.is_fsdp2(model):
        return _fsdp.FsdpEngine(model, group)
    raise ValueError(f"hetrun.Tuner: model= must be a DistributedDataParallel module or the "
                     f"module fully_shard returned (an FSDPModule), got {type(model).__name__}")


def optional_group_ranks(group) -> Optional[list]:
    import torch.distributed as dist

    ranks = getattr(dist, "get_process_group_ranks", None)
    return ranks(group) if ranks else None
