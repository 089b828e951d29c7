"""DistributedDataParallel under hetrun.Tuner (docs/ARCHITECTURE.md §5.2): a communication hook
marks this rank's last gradient bucket as the end of its compute region, then all-reduces like
DDP's default hook (dividing by the group size for reduction="mean")."""

from __future__ import annotations

import time
from typing import List, Optional, Tuple

import torch
import torch.distributed as dist

from hetrun._timing import CpuStepClock, CudaStepClock
from hetrun.engines.base import Engine


class DdpEngine(Engine):
    name = "DDP"

    def __init__(self, model, group) -> None:
        if group is not None and group is not model.process_group:
            raise ValueError("hetrun.Tuner: group= differs from model.process_group")
        existing = model._get_ddp_logging_data().get("comm_hook", "")
        if existing:
            raise ValueError(f"hetrun.Tuner: the model already has a DDP communication hook "
                             f"({existing}); the tuner registers its own (see model=)")
        self.model = model
        self.group = model.process_group
        self._clock = None
        self._open = False
        self._compute_end: Optional[float] = None

    def setup(self, device: torch.device, slowdown: float, group_size: int,
              reduction: str) -> None:
        self._clock = CudaStepClock(device) if device.type == "cuda" else CpuStepClock(slowdown)
        self._divisor = group_size if reduction == "mean" else 1
        self.model.register_comm_hook(self.group, self._comm_hook)

    def _comm_hook(self, group, bucket):
        # Runs in backward for each gradient bucket; the last bucket ends this rank's compute.
        if bucket.is_last() and self._open:
            self._compute_end = self._clock.mark_compute_end()
        tensor = bucket.buffer()
        if self._divisor != 1:
            tensor.div_(self._divisor)
        work = dist.all_reduce(tensor, group=group, async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0])

    def begin_step(self, samples: int) -> None:
        self._open = True
        self._compute_end = None
        self._clock.start(samples)

    def end_step(self) -> Tuple[List[Tuple[int, float]], float]:
        self._open = False
        measured = self._clock.finish()
        end = self._compute_end
        return measured, (time.perf_counter() - end) * 1000.0 if end else 0.0
