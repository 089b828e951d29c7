"""A stage's compute per micro-batch under torch.distributed.pipelining (docs/ARCHITECTURE.md
§5.9): the schedule waits for its receives before it calls the stage's forward_one_chunk /
backward_one_chunk, so timing those two calls measures this stage's forward and backward only,
never a wait for a neighbour. CPU: a monotonic clock; with HETRUN_EMULATE_SLOWDOWN k > 1 each
interval is stretched to k times its real length by sleeping before it closes (§5.4). GPU: CUDA
events on the current stream (recorded after the stream's wait for the receive), read once
complete, with no host synchronisation."""

from __future__ import annotations

import collections
import time
from typing import List, Tuple

import torch
from torch.distributed.pipelining import PipelineStage


class StageClock:
    """Sums forward and backward intervals; window() returns (forward_ms, backward_ms) per
    micro-batch of the intervals completed since the last call."""

    def __init__(self, device: torch.device, slowdown: float) -> None:
        self.cuda = device.type == "cuda"
        self.slowdown = 1.0 if self.cuda else slowdown
        self._sums = {"forward": [0.0, 0], "backward": [0.0, 0]}
        self._pending: collections.deque = collections.deque()

    def begin(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def end(self, kind: str, began) -> None:
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            self._pending.append((kind, began, event))
            return
        now = time.perf_counter()
        if self.slowdown > 1.0:
            time.sleep((self.slowdown - 1.0) * (now - began))
            now = time.perf_counter()
        self._add(kind, (now - began) * 1000.0)

    def _add(self, kind: str, ms: float) -> None:
        total = self._sums[kind]
        total[0] += ms
        total[1] += 1

    def window(self) -> Tuple[float, float]:
        if self.cuda:
            if self._pending:  # once per window, where every rank all-gathers anyway
                self._pending[-1][2].synchronize()
            while self._pending:
                kind, began, ended = self._pending.popleft()
                self._add(kind, float(began.elapsed_time(ended)))
        out: List[float] = []
        for kind in ("forward", "backward"):
            ms, count = self._sums[kind]
            out.append(ms / count if count else 0.0)
            self._sums[kind] = [0.0, 0]
        return out[0], out[1]


class TimedStage(PipelineStage):
    """A PipelineStage whose forward_one_chunk and backward_one_chunk run on a StageClock."""

    def __init__(self, *args, clock: StageClock, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.clock = clock

    def forward_one_chunk(self, *args, **kwargs):
        began = self.clock.begin()
        try:
            return super().forward_one_chunk(*args, **kwargs)
        finally:
            self.clock.end("forward", began)

    def backward_one_chunk(self, *args, **kwargs):
        began = self.clock.begin()
        try:
            return super().backward_one_chunk(*args, **kwargs)
        finally:
            self.clock.end("backward", began)
