"""No model=: hetrun.Tuner times the whole step() block (docs/ARCHITECTURE.md §5.2); the user
reduces gradients after it, or marks the end earlier with Tuner.mark_compute_end()."""

from __future__ import annotations

from typing import List, Tuple

import torch

from hetrun._timing import CpuStepClock, CudaStepClock
from hetrun.engines.base import Engine


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
