"""The compute region of a step: this rank's own forward and backward, up to its last gradient
bucket (docs/ARCHITECTURE.md §5.2). CPU: a monotonic clock, stretched by
HETRUN_EMULATE_SLOWDOWN (§5.4; a "/sample" factor adds (k - 1) x the rank's fitted per-sample
time, leaving its fixed per-step cost as it is). GPU: CUDA events on the current stream, read once complete (no
host synchronisation)."""

from __future__ import annotations

import collections
import time
from typing import List, Optional, Tuple

import torch

from hetrun import _core


class CpuStepClock:
    """Measures on the host. With HETRUN_EMULATE_SLOWDOWN the region is stretched by sleeping
    (whole-region factor W: to W times its real length; per-sample factor S: by (S - 1) x the
    rank's fitted per-sample time, hetrun/job/compute_stretch.h), then the clock is read: the
    time reported is measured, never computed."""

    def __init__(self, slowdown: float, per_sample: float = 1.0) -> None:
        self.stretch = _core.ComputeStretch()
        self.stretch.set_factors(slowdown, per_sample)
        self._start = 0.0
        self._mark = 0.0  # end of the region so far (the start, or the last compute end)
        self._real = 0.0  # real (unstretched) seconds of the region so far
        self._end: Optional[float] = None
        self._samples = 0

    @property
    def slowdown(self) -> float:
        """The whole-region factor W times the per-sample factor S."""
        return self.stretch.whole * self.stretch.per_sample

    def set_factors(self, whole: float, per_sample: float) -> None:
        self.stretch.set_factors(whole, per_sample)

    def start(self, samples: int) -> None:
        self._samples = samples
        self._start = self._mark = time.perf_counter()
        self._real = 0.0
        self._end = None

    def mark_compute_end(self) -> float:
        """The region ends now (again, if it had ended before: several synced backwards)."""
        now = time.perf_counter()
        self._real += now - self._mark
        if self.stretch.active:
            target = self.stretch.target_seconds(self._real, self._samples)
            time.sleep(max(0.0, target - (now - self._start)))
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
        self.stretch.observe(self._samples, self._real)
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


class CpuIntervalClock:
    """Sums compute intervals opened by resume() and closed by pause() (docs/ARCHITECTURE.md
    §5.8): under FSDP2 each interval lies between two of FSDP's hooks, so the all-gathers and
    reduce-scatters (which block on CPU) fall between intervals. Under HETRUN_EMULATE_SLOWDOWN
    each interval is stretched by sleeping before it closes, so that the step's compute so far
    takes what the stretch gives its real compute so far (CpuStepClock); a wait is never
    stretched. Calls outside start()/finish() are ignored (an eval forward)."""

    def __init__(self, slowdown: float, per_sample: float = 1.0) -> None:
        self.stretch = _core.ComputeStretch()
        self.stretch.set_factors(slowdown, per_sample)
        self._real = 0.0  # real (unstretched) compute seconds of the step so far
        self._active = False
        self._since: Optional[float] = None  # start of the open interval; None while paused
        self._paused_at: Optional[float] = None  # host time the clock last paused (in a step)
        self._compute = 0.0
        self._wait = 0.0
        self._intervals = 0
        self._samples = 0

    def start(self, samples: int) -> None:
        """A step begins, paused: the first interval opens after the root's all-gather wait."""
        self._active = True
        self._samples = samples
        self._since = self._paused_at = None
        self._compute = self._wait = self._real = 0.0
        self._intervals = 0

    @property
    def slowdown(self) -> float:
        """The whole-region factor W times the per-sample factor S."""
        return self.stretch.whole * self.stretch.per_sample

    def set_factors(self, whole: float, per_sample: float) -> None:
        self.stretch.set_factors(whole, per_sample)

    def resume(self) -> None:
        if not self._active or self._since is not None:
            return
        now = time.perf_counter()
        if self._paused_at is not None:
            self._wait += now - self._paused_at
        self._since = now

    def pause(self) -> None:
        if self._since is None:
            return
        now = time.perf_counter()
        self._real += now - self._since
        if self.stretch.active:
            stretched_so_far = self._compute + (now - self._since)
            target = self.stretch.target_seconds(self._real, self._samples)
            time.sleep(max(0.0, target - stretched_so_far))
            now = time.perf_counter()
        self._compute += now - self._since
        self._intervals += 1
        self._since = None
        self._paused_at = now

    @property
    def intervals(self) -> int:
        """Intervals closed in the current (or last) step."""
        return self._intervals

    def finish(self) -> Tuple[List[Tuple[int, float]], float]:
        """Closes the step: ([(samples, compute_ms)], host ms spent inside FSDP's hooks)."""
        self.pause()
        if self._paused_at is not None:
            self._wait += time.perf_counter() - self._paused_at
        if self._active:
            self.stretch.observe(self._samples, self._real)
        self._active = False
        return [(self._samples, self._compute * 1000.0)], self._wait * 1000.0


class CudaIntervalClock:
    """The same intervals as CUDA events on the current stream: resume() records an event after
    FSDP's hook has made the stream wait for its all-gather, pause() one before the next hook, so
    the GPU time between the two is this rank's kernels only. A step's sum is returned once its
    last event completed (usually a step later), tagged with its sample count."""

    def __init__(self, device: torch.device) -> None:
        self.slowdown = 1.0
        self._device = device
        self._pending: collections.deque = collections.deque()
        self._pairs: List[list] = []
        self._active = False
        self._open = None
        self._samples = 0
        self._paused_at: Optional[float] = None
        self._wait = 0.0

    def start(self, samples: int) -> None:
        self._active = True
        self._samples = samples
        self._pairs = []
        self._open = None
        self._paused_at = None
        self._wait = 0.0

    def resume(self) -> None:
        if not self._active or self._open is not None:
            return
        if self._paused_at is not None:
            self._wait += time.perf_counter() - self._paused_at
        begin = torch.cuda.Event(enable_timing=True)
        begin.record()
        self._open = begin

    def pause(self) -> None:
        if self._open is None:
            return
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        self._pairs.append((self._open, end))
        self._open = None
        self._paused_at = time.perf_counter()

    @property
    def intervals(self) -> int:
        return len(self._pairs)

    def finish(self) -> Tuple[List[Tuple[int, float]], float]:
        self.pause()
        if self._paused_at is not None:
            self._wait += time.perf_counter() - self._paused_at
        self._active = False
        self._pending.append((self._samples, self._pairs))
        self._pairs = []
        done = []
        while self._pending and (not self._pending[0][1] or self._pending[0][1][-1][1].query()):
            samples, pairs = self._pending.popleft()
            done.append((samples, sum(float(b.elapsed_time(e)) for b, e in pairs)))
        return done, self._wait * 1000.0
