"""DeepSpeed ZeRO (a deepspeed.DeepSpeedEngine, stages 0-3) under hetrun.Tuner
(docs/ARCHITECTURE.md §5.12).

The tuner's group is DeepSpeed's data-parallel group, which must be the whole world (a model-,
pipeline- or sequence-parallel dimension is out of scope: ValueError). What is timed is this
rank's compute only: the clock runs from the step's start and pauses inside every collective
DeepSpeed issues through deepspeed.comm (its communication backend object `cdb`, whose methods
this engine wraps on the instance: ZeRO-2's reduce-scatters and ZeRO-3's all-gathers run inside
forward and backward, and a rank's wait for a slower peer happens in them), and inside the wait()
of a work handle such a call returned (async_op=True). On CPU each interval is stretched by
HETRUN_EMULATE_SLOWDOWN, a wait never; on GPU the intervals are CUDA events (the FSDP2 clocks,
hetrun._timing). ZeRO-2 and 3 reduce on every backward, so every rank runs the same number of
micro-batches per step (lockstep_micro_batches); ZeRO-0 and 1 reduce at the boundary only.

This module never imports deepspeed: the engine is recognised through sys.modules."""

from __future__ import annotations

import sys
import weakref
from typing import List, Tuple

import torch
import torch.distributed as dist

from hetrun._timing import CpuIntervalClock, CudaIntervalClock
from hetrun.engines.base import Engine

#: the collectives of deepspeed.comm's backend (deepspeed/comm/torch.py, 0.19) the clock pauses in
COLLECTIVES = ("all_reduce", "inference_all_reduce", "all_reduce_coalesced", "reduce",
               "reduce_scatter", "reduce_scatter_tensor", "broadcast", "all_gather",
               "all_gather_into_tensor", "all_gather_base", "all_gather_coalesced",
               "all_to_all_single", "all_to_all", "gather", "scatter", "barrier",
               "monitored_barrier", "send", "recv", "broadcast_object_list", "all_gather_object")


#: the engines whose clocks pause in a collective (one per live tuner; the wrappers are installed
#: once per backend and call every one)
_LIVE: "weakref.WeakSet" = weakref.WeakSet()
_MARK = "_hetrun_timed"


def is_deepspeed_engine(model) -> bool:
    module = sys.modules.get("deepspeed.runtime.engine")
    return module is not None and isinstance(model, module.DeepSpeedEngine)


def zero_stage(engine) -> int:
    return int(engine.zero_optimization_stage())


def _backend():
    comm = sys.modules.get("deepspeed.comm.comm")
    backend = getattr(comm, "cdb", None)
    if backend is None:
        raise ValueError("hetrun.Tuner: deepspeed.comm has no backend (call deepspeed.initialize "
                         "first and pass the engine it returned)")
    return backend


class _TimedWork:
    """A work handle whose wait() the clock pauses in (async collectives)."""

    def __init__(self, work) -> None:
        self._work = work

    def wait(self, *args, **kwargs):
        engines = _pause_all()
        try:
            return self._work.wait(*args, **kwargs)
        finally:
            for engine in engines:
                engine.resume()

    def __getattr__(self, name):
        return getattr(self._work, name)


def _pause_all() -> list:
    engines = list(_LIVE)
    for engine in engines:
        engine.pause()
    return engines


def _timed(method):
    def call(*args, **kwargs):
        engines = _pause_all()
        try:
            work = method(*args, **kwargs)
        finally:
            for engine in engines:
                engine.resume()
        if work is not None and hasattr(work, "wait"):  # async_op=True: a work handle
            return _TimedWork(work)
        return work
    return call


def _install(backend) -> None:
    """Wraps the backend's collectives on the instance, once."""
    if getattr(backend, _MARK, False):
        return
    for name in COLLECTIVES:
        method = getattr(backend, name, None)
        if method is not None:
            setattr(backend, name, _timed(method))
    setattr(backend, _MARK, True)


class DeepSpeedZeroEngine(Engine):
    name = "DeepSpeed"

    def __init__(self, model, group) -> None:
        world = dist.get_world_size()
        if getattr(model, "pipeline_parallelism", False):
            raise ValueError("hetrun.Tuner: model= is a DeepSpeed PipelineEngine: the pipeline "
                             "engine is not balanced (hetrun.pipelining balances pipelines)")
        dp = int(model.dp_world_size)
        if dp != world:
            raise ValueError(f"hetrun.Tuner: the DeepSpeed engine's data-parallel size is {dp} "
                             f"of {world} ranks: a model-, pipeline- or sequence-parallel "
                             f"dimension is out of scope; the data-parallel group must be the "
                             f"whole world")
        if group is not None and dist.get_world_size(group) != world:
            raise ValueError("hetrun.Tuner: group= must be the whole world (DeepSpeed's "
                             "data-parallel group)")
        self.model = model
        self.stage = zero_stage(model)
        self.lockstep_micro_batches = self.stage >= 2
        self.group = None  # WORLD
        self._clock = None
        self._depth = 0
        self._running = False
        self._resume_after = False

    def setup(self, device: torch.device, slowdown: float, group_size: int,
              reduction: str) -> None:
        if reduction != "mean":
            raise ValueError(f"hetrun.Tuner: reduction={reduction!r}: DeepSpeed averages the "
                             f"gradients over its data-parallel group; use reduction='mean'")
        self._clock = CudaIntervalClock(device) if device.type == "cuda" else \
            CpuIntervalClock(slowdown)
        _install(_backend())
        _LIVE.add(self)

    def pause(self) -> None:
        """Entering a collective (nested calls: the outermost counts)."""
        self._depth += 1
        if self._depth == 1:
            self._resume_after = self._running
            self._set_running(False)

    def resume(self) -> None:
        """Leaving it: the clock runs again if it ran before (a collective outside a step's
        micro-steps starts nothing)."""
        self._depth -= 1
        if self._depth == 0 and self._resume_after:
            self._set_running(True)

    def _set_running(self, running: bool) -> None:
        if running != self._running:
            (self._clock.resume if running else self._clock.pause)()
            self._running = running

    # ---- the step, in the integration's micro-steps ---------------------------------------
    def begin_step(self, samples: int) -> None:
        self._clock.start(samples)
        self._running = False
        self._set_running(True)

    def leave(self) -> None:
        """Between two micro-steps of one step (the data loader's time is no compute)."""
        self._set_running(False)

    def enter(self) -> None:
        self._set_running(True)

    def end_step(self) -> Tuple[List[Tuple[int, float]], float]:
        self._running = False
        return self._clock.finish()

    @property
    def intervals(self) -> int:
        return self._clock.intervals
