"""tuner.report: one window's figures, the same on every rank (built from the gathered records)."""

from __future__ import annotations

import dataclasses
from typing import List, Optional

from hetrun import _core


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
    #: optimal compute time (solver min-max over the curves fitted this window) / achieved
    #: (the slowest rank's median compute); None before every rank has a fit
    efficiency: Optional[float]
    samples_per_s: float  #: global batch / the slowest rank's mean step time
    overhead_ms: float  #: the tuner's cost to the job this window (see window_loop.h)
    tuner_overhead: float  #: overhead_ms as a fraction of the window's wall time
    changed: bool  #: whether this window's decision moved the split


def optimal_compute_ms(ranks: list, batch: int, min_share: int) -> Optional[float]:
    """min over integer splits of max_r t_r(n_r) under the window's fits, or None without fits."""
    if not ranks or any(r["c_ms"] <= 0 for r in ranks):
        return None
    fits = [(r["a_ms"], r["c_ms"], r["cap"]) for r in ranks]
    rest = batch - min_share * len(ranks)
    shares = _core.solve_shares(rest, fits)
    return max(r["a_ms"] + r["c_ms"] * n for r, n in zip(ranks, shares))


def build_report(raw: dict, batch: int, min_share: int, shares: list,
                 applies_from: int) -> WindowReport:
    ranks = raw["ranks"]
    compute = [r["compute_ms"] for r in ranks]
    step = [r["step_ms"] for r in ranks]
    slowest = max(compute) if compute else 0.0
    idle = 0.0
    if slowest > 0:
        idle = sum(slowest - c for c in compute) / (len(compute) * slowest)
    optimum = optimal_compute_ms(ranks, batch, min_share)
    efficiency = optimum / slowest if optimum is not None and slowest > 0 else None
    step_max = max(step) if step else 0.0
    return WindowReport(
        window=raw["window"],
        shares=list(shares),
        shares_next=list(raw["shares_next"]),
        applies_from_step=applies_from,
        compute_ms=compute,
        step_ms=step,
        wait_ms=[r["wait_ms"] for r in ranks],
        barrier_idle=idle,
        efficiency=efficiency,
        samples_per_s=1000.0 * batch / step_max if step_max > 0 else 0.0,
        overhead_ms=raw["overhead_ms"],
        tuner_overhead=raw["overhead_fraction"],
        changed=list(raw["shares_next"]) != list(raw["shares_used"]),
    )
