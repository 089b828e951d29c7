"""tuner.report: one window's figures, the same on every rank (built from the gathered records)."""

from __future__ import annotations

import dataclasses
from typing import List, Optional


@dataclasses.dataclass(frozen=True)
class WindowReport:
    window: int  #: 1-based window number
    shares: List[int]  #: the split in force at the window's last step (group order)
    shares_next: List[int]  #: the split decided at its end (from applies_from_step on)
    applies_from_step: int  #: first step trained with shares_next (later when a loader prefetched)
    compute_ms: List[float]  #: per rank: median compute time per step (up to its last bucket)
    step_ms: List[float]  #: per rank: mean wall time per step
    wait_ms: List[float]  #: per rank: mean time from its last bucket to the end of step()
    barrier_idle: float  #: sum_r (max compute - compute_r) / (ranks * max compute)
    #: optimal compute time (the solver's min-max over the curves fitted this window) / achieved
    #: (the slowest rank's median compute); None before every rank has a fit. The core's figure
    #: (tuner::WindowReport), fitted alike whether or not the tuner acts (tune=False).
    efficiency: Optional[float]
    optimal_compute_ms: Optional[float]  #: that optimum (ms)
    samples_per_s: float  #: global batch / the slowest rank's mean step time
    #: global batch / (optimum + the measured rest of the step); None before every rank has a fit
    ideal_samples_per_s: Optional[float]
    overhead_ms: float  #: the tuner's cost to the job this window (see window_loop.h)
    tuner_overhead: float  #: overhead_ms as a fraction of the window's wall time
    changed: bool  #: whether this window's decision moved the split
    #: per rank: the largest micro-batch of the window's last step (its share without
    #: tuner.micro_batches()) and how many micro-batches that step ran (1 without)
    micro_batch_size: List[int] = dataclasses.field(default_factory=list)
    micro_batch_count: List[int] = dataclasses.field(default_factory=list)
    #: per rank: measured over expected time against its GPU model's peers (or its own history when
    #: alone in its model or of unknown model), 1.0 when unknown (docs/ARCHITECTURE.md §5.10)
    slowdown_ratio: List[float] = dataclasses.field(default_factory=list)
    #: the group ranks that are fail-slow after this window (K windows in a row)
    fail_slow: List[int] = dataclasses.field(default_factory=list)


def build_report(raw: dict, batch: int, min_share: int, shares: list, applies_from: int,
                 micro_sizes: list, micro_counts: list) -> WindowReport:
    ranks = raw["ranks"]
    compute = [r["compute_ms"] for r in ranks]
    slowest = max(compute) if compute else 0.0
    idle = 0.0
    if slowest > 0:
        idle = sum(slowest - c for c in compute) / (len(compute) * slowest)
    return WindowReport(
        window=raw["window"],
        shares=list(shares),
        shares_next=list(raw["shares_next"]),
        applies_from_step=applies_from,
        compute_ms=compute,
        step_ms=[r["step_ms"] for r in ranks],
        wait_ms=[r["wait_ms"] for r in ranks],
        barrier_idle=idle,
        efficiency=raw["efficiency"] or None,
        optimal_compute_ms=raw["optimal_compute_ms"] or None,
        samples_per_s=raw["samples_per_s"],
        ideal_samples_per_s=raw["ideal_samples_per_s"] or None,
        overhead_ms=raw["overhead_ms"],
        tuner_overhead=raw["overhead_fraction"],
        changed=list(raw["shares_next"]) != list(raw["shares_used"]),
        micro_batch_size=list(micro_sizes),
        micro_batch_count=list(micro_counts),
        slowdown_ratio=[h["ratio"] for h in raw.get("health", [])],
        fail_slow=[r for r, h in enumerate(raw.get("health", [])) if h["fail_slow"]],
    )
