"""The memory model behind Tuner.micro_batches()' cap (docs/ARCHITECTURE.md §5.8): a rank's peak
for a micro-batch of n samples is peak(n) = fixed + base + per_sample x n, where fixed is what is
allocated when a step starts (parameters, gradients, optimizer state: the largest any rank saw),
and base + per_sample x n is what the step adds on top (activations, and under FSDP2 the
unsharded parameters of the units in flight). Every rank's micro-batch is capped so that the
peak stays within its memory ceiling: the job's (hetrun run --memory-ceiling job, the default), or
its GPU model's (--memory-ceiling model: an H200 beside A100s keeps its memory). Each rank's
ceiling rides in the one all-gather of the fixed part, so a job-wide micro-batch count (FSDP2,
DeepSpeed ZeRO-2/3) is taken over every rank's own cap.

per_sample is either declared (bytes_per_sample=N, base 0; what the CPU tests use) or measured
(bytes_per_sample="measure", CUDA only): the first step runs at its usual micro-batch size, the
second at half of it (twice the micro-batches: the gradients are the same), each step's peak
above its start is read from torch.cuda.max_memory_allocated(), and the line through the two
points is fitted on every rank; one all-gather then takes the largest base and per_sample of any
rank. Until then (the first two steps) only the caller's max_micro_batch caps the micro-batches.
"""

from __future__ import annotations

from typing import List, Optional, Tuple

import torch
import torch.distributed as dist

from hetrun import _core
from hetrun._checks import positive_int

MEASURE = "measure"
_PROBE_STEPS = 2  # step 0 at the usual size, step 1 at half of it


def fit_peak(points: List[Tuple[int, int]]) -> Tuple[int, int]:
    """(base, per_sample) of the least-squares line bytes = base + per_sample x n through
    `points` [(n, bytes above the step's start)], rounded up. With one distinct n (or a slope
    the points cannot support: <= 0, or a negative base) the conservative reading: every byte
    scales with the samples, base 0, per_sample = max(bytes / n)."""
    sized = [(n, b) for n, b in points if n > 0]
    if not sized:
        raise ValueError("hetrun.Tuner: no step with samples to measure memory from")
    conservative = (0, max(-(-max(b, 0) // n) for n, b in sized) or 1)
    if len({n for n, _ in sized}) < 2:
        return conservative
    k = len(sized)
    mean_n = sum(n for n, _ in sized) / k
    mean_b = sum(b for _, b in sized) / k
    sxx = sum((n - mean_n) ** 2 for n, _ in sized)
    sxy = sum((n - mean_n) * (b - mean_b) for n, b in sized)
    slope = sxy / sxx
    base = mean_b - slope * mean_n
    if slope <= 0 or base < 0:
        return conservative
    return int(-(-base // 1)), max(1, int(-(-slope // 1)))


class Memory:
    """One rank's memory model; see the module's docstring."""

    def __init__(self, bytes_per_sample, ceiling, device: torch.device) -> None:
        self.per_sample: Optional[int] = None
        self.base = 0
        self.ceiling: Optional[int] = None
        self.ceilings: Optional[List[int]] = None  # every group rank's, after gather_fixed()
        self.local_fixed = -1  # the largest allocated bytes at a step's start here (-1: none)
        self._cuda = device.type == "cuda"
        self.measuring = bytes_per_sample == MEASURE
        self._points: List[Tuple[int, int]] = []
        self._start = 0
        if bytes_per_sample is None:
            if ceiling is not None:
                raise ValueError(f"hetrun.Tuner: memory_ceiling_bytes={ceiling!r} needs "
                                 f"bytes_per_sample=")
            return
        if self.measuring:
            if not self._cuda:
                raise ValueError(f"hetrun.Tuner: bytes_per_sample={MEASURE!r} reads "
                                 f"torch.cuda.max_memory_allocated() and needs a CUDA device "
                                 f"(this rank's is {device}); declare bytes_per_sample=N instead")
        else:
            positive_int("bytes_per_sample", bytes_per_sample, 1)
            self.per_sample = bytes_per_sample
        if ceiling is None:
            ceiling = _core.read_job()["memory_ceiling_bytes"]
            if ceiling is None:
                raise ValueError(f"hetrun.Tuner: bytes_per_sample={bytes_per_sample!r} needs a "
                                 f"memory ceiling: memory_ceiling_bytes= or "
                                 f"HETRUN_MEMORY_CEILING_BYTES")
        positive_int("memory_ceiling_bytes", ceiling, 1)
        self.ceiling = ceiling
        self.local_fixed = self._allocated()

    def _allocated(self) -> int:
        return int(torch.cuda.memory_allocated()) if self._cuda else 0

    def step_started(self) -> None:
        if self.ceiling is not None and self._cuda:
            self._start = self._allocated()
            self.local_fixed = max(self.local_fixed, self._start)
            if self.measuring:
                torch.cuda.reset_peak_memory_stats()

    def probe_cap(self, step: int, cap: int) -> int:
        """The job-wide micro-batch cap for `step` while measuring: half of `cap` on the second
        step, so the two steps' peaks are two points of the line."""
        if self.measuring and step == 1:
            return max(1, (cap + 1) // 2)
        return cap

    def step_ended(self, step: int, micro_batch: int, group, size: int,
                   device: torch.device) -> None:
        """Records a measured step's peak; after the second, fits and gathers (every rank alike:
        the steps are counted the same everywhere)."""
        if not self.measuring or step >= _PROBE_STEPS:
            return
        self._points.append((micro_batch, int(torch.cuda.max_memory_allocated()) - self._start))
        if step + 1 < _PROBE_STEPS:
            return
        base, per_sample = fit_peak(self._points)
        mine = torch.tensor([base, per_sample], dtype=torch.int64, device=device)
        parts = [torch.empty_like(mine) for _ in range(size)]
        dist.all_gather(parts, mine, group=group)
        self.base = max(int(p[0].item()) for p in parts)
        self.per_sample = max(int(p[1].item()) for p in parts)

    def gather_fixed(self, group, size: int, device: torch.device) -> int:
        """The job-wide fixed part (one all-gather; -1 without a memory model). The same
        all-gather brings every rank's ceiling (self.ceilings, group order)."""
        if self.ceiling is None:
            return -1
        mine = torch.tensor([self.local_fixed, self.ceiling], dtype=torch.int64, device=device)
        parts = [torch.empty_like(mine) for _ in range(size)]
        dist.all_gather(parts, mine, group=group)
        self.ceilings = [int(p[1].item()) for p in parts]
        return max(int(p[0].item()) for p in parts)

    def largest(self, fixed: int, ceiling: Optional[int] = None) -> Optional[int]:
        """The largest micro-batch within `ceiling` (default this rank's); None without a
        model (yet)."""
        if self.per_sample is None:
            return None
        ceiling = self.ceiling if ceiling is None else ceiling
        room = (ceiling - max(fixed, 0) - self.base) // self.per_sample
        if room < 1:
            raise ValueError(f"hetrun.Tuner: not one sample fits: fixed {fixed} + base "
                             f"{self.base} + bytes_per_sample={self.per_sample} exceeds the "
                             f"memory ceiling {ceiling}")
        return int(room)

    def largest_per_rank(self, fixed: int) -> Optional[List[int]]:
        """Every group rank's largest micro-batch (its own ceiling); None without a model."""
        if self.per_sample is None or self.ceilings is None:
            return None
        return [self.largest(fixed, c) for c in self.ceilings]

    def describe(self) -> dict:
        """What the cap comes from, for the report."""
        return {"source": MEASURE if self.measuring else "declared" if self.per_sample else None,
                "per_sample": self.per_sample, "base": self.base, "ceiling": self.ceiling}
