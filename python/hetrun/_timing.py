"""The compute region of a step: this rank's own forward and backward, up to its last gradient
bucket (docs/ARCHITECTURE.md §5.2). CPU: a monotonic clock, stretched by
HETRUN_EMULATE_SLOWDOWN (§5.4). GPU: CUDA events on the current stream, read once complete (no
host synchronisation)."""

from __future__ import annotations

import collections
import time
from typing import List, Optional, Tuple

import torch


class CpuStepClock:
    """Measures on the host. With a slowdown k > 1 the region is stretched to k times its real
    length by sleeping, then the clock is read: the time reported is measured, never computed."""

    def __init__(self, slowdown: float) -> None:
        self.slowdown = slowdown
        self._start = 0.0
        self._mark = 0.0  # end of the region so far (the start, or the last compute end)
        self._end: Optional[float] = None
        self._samples = 0

    def start(self, samples: int) -> None:
        self._samples = samples
        self._start = self._mark = time.perf_counter()
        self._end = None

    def mark_compute_end(self) -> float:
        """The region ends now (again, if it had ended before: several synced backwards)."""
        now = time.perf_counter()
        if self.slowdown > 1.0:
            time.sleep((self.slowdown - 1.0) * (now - self._mark))
            now = time.perf_counter()
        self._mark = self._end = now
        return now

    @property
    def compute_ended(self) -> bool:
        return self._end is not None

    def finish(self) -> List[Tuple[int, float]]:
        """Closes the step: [(samples, compute_ms)] of every completed step not yet returned."""
        if self._end is None:
            self.mark_compute_end()
        return [(self._samples, (self._end - self._start) * 1000.0)]


class CudaStepClock:
    """CUDA events around the region; a step's time is returned once its end event completed
    (usually one step later), tagged with its sample count."""

    def __init__(self, device: torch.device) -> None:
        self.slowdown = 1.0
        self._device = device
        self._pending: collections.deque = collections.deque()
        self._current = None

    def start(self, samples: int) -> None:
        begin = torch.cuda.Event(enable_timing=True)
        begin.record()
        self._current = [samples, begin, None]

    def mark_compute_end(self) -> float:
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        self._current[2] = end
        return time.perf_counter()

    @property
    def compute_ended(self) -> bool:
        return self._current is not None and self._current[2] is not None

    def finish(self) -> List[Tuple[int, float]]:
        if self._current[2] is None:
            self.mark_compute_end()
        self._pending.append(self._current)
        self._current = None
        done = []
        while self._pending and self._pending[0][2].query():
            samples, begin, end = self._pending.popleft()
            done.append((samples, float(begin.elapsed_time(end))))
        return done
