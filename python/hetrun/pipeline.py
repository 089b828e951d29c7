"""Live re-balancing of a pipeline from Python (docs/how-to/python-pipelines.md).

The torch-free core of the C++ pipeline runtime, bound (hetrun._core.pipeline), plus small
torch-free helpers for the all-gathered figures:

    layout = hetrun.pipeline.load_job_layout(os.environ["HETRUN_PLAN"])
    rebalancer = hetrun.pipeline.Rebalancer(layout, threshold=0.05)
    log = hetrun.pipeline.MeasurementLog.from_environment(layout, rank)
    ...                                       # one window of training, timed per stage
    log.append(hetrun.pipeline.WindowMeasurement(window=w, ...))
    figures = ...                             # every rank's stage, first_layer, layers,
                                              # forward_ms, backward_ms (dist.all_gather)
    decision = rebalancer.decide(hetrun.pipeline.stage_window(figures, len(layout.stages)))
    if decision.move:                         # every rank gets the same decision
        for layer, src, dst in hetrun.pipeline.layer_moves(decision.current_counts,
                                                           decision.new_counts): ...
        rebalancer.applied(decision)
        layout = hetrun.pipeline.with_split(layout, decision.new_counts)   # revision + 1
        hetrun.pipeline.record_move(layout)   # HETRUN_PLAN per node, HETRUN_LAYOUT_STATE once

Errors follow the package's mapping: ValueError for bad input and missing files (naming the file,
the JSON path, the option or the stage), RuntimeError for other failures (naming the call).
"""

from __future__ import annotations

import math
import operator
import os
from typing import Iterable, List, Mapping, Optional, Sequence, Tuple

from hetrun._core import pipeline as _native

JobLayout = _native.JobLayout
MeasurementLog = _native.MeasurementLog
Measurements = _native.Measurements
RankMeasurements = _native.RankMeasurements
RebalanceDecision = _native.RebalanceDecision
Rebalancer = _native.Rebalancer
StageLayout = _native.StageLayout
StageMeasurement = _native.StageMeasurement
WindowMeasurement = _native.WindowMeasurement
load_job_layout = _native.load_job_layout
load_measurements = _native.load_measurements
parse_job_layout = _native.parse_job_layout
parse_measurements = _native.parse_measurements
validate_job_layout = _native.validate_job_layout
write_job_layout_file = _native.write_job_layout_file

__all__ = [
    "JobLayout", "MeasurementLog", "Measurements", "RankMeasurements", "RebalanceDecision",
    "Rebalancer", "StageLayout", "StageMeasurement", "WindowMeasurement", "layer_moves",
    "load_job_layout", "load_measurements", "owners", "parse_job_layout", "parse_measurements",
    "record_move", "stage_window", "validate_job_layout", "with_split", "write_job_layout_file",
]

_FIELDS = ("stage", "first_layer", "layers", "forward_ms", "backward_ms")


def _whole(figure: Mapping, key: str, index: int) -> int:
    """figure[key] as an int when it is a whole number (1, 1.0 as an all-gather of floats gives,
    a one-element tensor); ValueError for 1.9 or True instead of truncating."""
    value = figure[key]
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if number.is_integer():
            return int(number)
    raise ValueError(f"stage_window: figure {index}: {key}={value!r} is not a whole number")


def stage_window(figures: Iterable[Mapping], stages: int) -> List[StageMeasurement]:
    """Every rank's figure of one window (all-gathered dicts with stage, first_layer, layers,
    forward_ms, backward_ms and optionally layer_ms) -> one StageMeasurement per stage, in stage
    order: each stage's slowest replica (largest forward + backward), as the C++ trainer does.
    ValueError names a figure without a field, one whose stage or layers are not whole numbers,
    or a stage nobody measured."""
    slowest: dict = {}
    for index, figure in enumerate(figures):
        missing = [f for f in _FIELDS if f not in figure]
        if missing:
            raise ValueError(f"stage_window: figure {index} has no {', '.join(missing)}")
        stage, _, _ = (_whole(figure, key, index) for key in ("stage", "first_layer", "layers"))
        if not 0 <= stage < stages:
            raise ValueError(f"stage_window: figure {index} names stage {stage}, "
                             f"the pipeline has {stages}")
        total = float(figure["forward_ms"]) + float(figure["backward_ms"])
        if stage not in slowest or total > slowest[stage][0]:
            slowest[stage] = (total, figure)
    absent = [s for s in range(stages) if s not in slowest]
    if absent:
        raise ValueError(f"stage_window: no figure for stage {absent[0]}")
    return [StageMeasurement(first_layer=int(f["first_layer"]), layers=int(f["layers"]),
                             forward_ms=float(f["forward_ms"]),
                             backward_ms=float(f["backward_ms"]),
                             layer_ms=[float(v) for v in f.get("layer_ms", ())])
            for _, f in (slowest[s] for s in range(stages))]


def owners(counts: Sequence[int]) -> List[int]:
    """The stage of every layer under a split (layers per stage)."""
    if any(int(c) < 1 for c in counts):
        raise ValueError(f"owners: every stage needs at least one layer, got {list(counts)}")
    return [stage for stage, count in enumerate(counts) for _ in range(int(count))]


def layer_moves(current: Sequence[int], new: Sequence[int]) -> List[Tuple[int, int, int]]:
    """(layer, from_stage, to_stage) for every layer whose stage changes, in layer order: the
    order every rank walks them in, so blocking send/recv pairs up without deadlock."""
    before, after = owners(current), owners(new)
    if len(before) != len(after):
        raise ValueError(f"layer_moves: split {list(current)} has {len(before)} layers, "
                         f"split {list(new)} has {len(after)}")
    return [(layer, a, b) for layer, (a, b) in enumerate(zip(before, after)) if a != b]


def with_split(layout: JobLayout, counts: Sequence[int]) -> JobLayout:
    """A copy of `layout` with `counts` layers per stage and its revision + 1 (the layout file
    after a live move). ValueError when the split does not fit the layout."""
    copy = parse_job_layout(layout.to_json(), "layout")
    if len(counts) != len(copy.stages):
        raise ValueError(f"with_split: {len(counts)} counts for {len(copy.stages)} stages")
    stages, first = [], 0
    for stage, count in zip(copy.stages, counts):
        stage.first_layer, stage.layers = first, int(count)
        stages.append(stage)
        first += int(count)
    copy.stages = stages
    copy.revision = layout.revision + 1
    validate_job_layout(copy, "with_split")
    return copy


def _env_int(name: str) -> int:
    text = os.environ.get(name)
    if text is None:
        raise ValueError(f"record_move: {name} is not set (run under hetrun run, or pass it)")
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"record_move: {name}={text!r} is not an integer") from None


def record_move(layout: JobLayout, *, rank: Optional[int] = None,
                local_rank: Optional[int] = None, layout_path: Optional[str] = None,
                state_path: Optional[str] = None) -> List[str]:
    """After a live move, every rank calls this with the new layout, as the C++ trainer does:
    local rank 0 of each node rewrites the run folder's layout file (HETRUN_PLAN), so an in-pod
    restart (--max-restarts) resumes from the moved split; global rank 0 also rewrites the layout
    state (HETRUN_LAYOUT_STATE, when `hetrun run --layout-state` set it), so a job restarted
    whole resumes too. Both atomic. Arguments left out come from the environment (RANK,
    LOCAL_RANK, HETRUN_PLAN, HETRUN_LAYOUT_STATE). Returns the paths written. ValueError names a
    missing or malformed variable; a file that cannot be written raises the package's error for
    it, naming the file (the layout state's with "HETRUN_LAYOUT_STATE")."""
    rank = _env_int("RANK") if rank is None else int(rank)
    local_rank = _env_int("LOCAL_RANK") if local_rank is None else int(local_rank)
    if layout_path is None:
        layout_path = os.environ.get("HETRUN_PLAN", "")
    if state_path is None:
        state_path = os.environ.get("HETRUN_LAYOUT_STATE", "")
    if local_rank == 0 and not layout_path:
        raise ValueError("record_move: HETRUN_PLAN is not set (the pipeline's layout file)")
    _native.write_moved_layout(layout, layout_path, state_path, rank, local_rank)
    written = [layout_path] if local_rank == 0 else []
    if rank == 0 and state_path:
        written.append(state_path)
    return written
