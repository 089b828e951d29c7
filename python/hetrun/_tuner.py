"""hetrun.Tuner: each rank's share of the global batch from its measured compute times, with
exact gradients (docs/ARCHITECTURE.md §5.2, §5.3). Windows, warm-up, cost model and solver are
the C++ core's (hetrun._core.WindowLoop); this file times the steps and exchanges the records."""

from __future__ import annotations

import struct
import time
import weakref
from typing import List, Optional

import torch
import torch.distributed as dist

from hetrun import _core
from hetrun._report import WindowReport, build_report
from hetrun._timing import CpuStepClock, CudaStepClock

_REDUCTIONS = ("mean", "sum")


_MAX_COUNT = 2**40  # the core's bound on counts (a batch, a window): int64 arithmetic stays exact


def _positive_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"hetrun.Tuner: {name}={value!r} must be an integer >= {minimum}")
    if value > _MAX_COUNT:
        raise ValueError(f"hetrun.Tuner: {name}={value!r} must be an integer <= 2^40")
    return value


class _Step:
    """The context manager tuner.step() returns (one per tuner, reused: no allocation per step)."""

    __slots__ = ("_tuner",)

    def __init__(self, tuner: "Tuner") -> None:
        self._tuner = tuner

    def __enter__(self) -> "Tuner":
        self._tuner._enter()
        return self._tuner

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._tuner._exit(exc_type is not None)
        return False


class Tuner:
    """Balances one data-parallel group's global batch over its ranks.

    global_batch: samples per step over the group (B). window: steps per window (W).
    model: a DistributedDataParallel module; the tuner registers a communication hook on it that
      marks this rank's last gradient bucket as the end of its compute region, then all-reduces
      like DDP's default hook (dividing by the group size for reduction="mean"). Without model,
      the step() block must end before any collective (users who all-reduce themselves).
    warmup: steps no fit sees. min_share / max_share: bounds of every rank's share.
    group: the process group (default WORLD; with model=, model.process_group).
    reduction: "mean" (DDP's mean all-reduce; loss factor group_size / B) or "sum" (the user's
      own SUM all-reduce; loss factor 1 / B). tune=False keeps the initial split (a baseline).
    shares: the initial split (default as even as possible).
    Other keywords go to the controller and cost model by their C++ names: dead_band,
    noise_sigmas, min_gain, max_step, max_relative_step, forgetting, max_points,
    min_relative_spread, change_sigmas, change_floor, local_width, min_slope_fraction,
    slope_sigmas (hetrun/tuner/controller.h, cost_model.h).
    """

    def __init__(self, global_batch: int, window: int = 10, model=None, *, warmup: int = 2,
                 min_share: int = 1, max_share: Optional[int] = None, group=None,
                 reduction: str = "mean", tune: bool = True,
                 shares: Optional[List[int]] = None, **controller_options) -> None:
        _positive_int("global_batch", global_batch, 1)
        _positive_int("window", window, 1)
        _positive_int("warmup", warmup, 0)
        _positive_int("min_share", min_share, 0)
        if reduction not in _REDUCTIONS:
            raise ValueError(f"hetrun.Tuner: reduction={reduction!r} must be 'mean' or 'sum'")
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError("hetrun.Tuner needs torch.distributed initialised: call "
                               "dist.init_process_group() first")
        group = self._group_of(model, group)
        self._group = group
        self._rank = dist.get_rank(group)
        if self._rank < 0:
            ranks = getattr(dist, "get_process_group_ranks", None)
            members = ranks(group) if ranks else f"of {dist.get_world_size(group)} ranks"
            raise RuntimeError(f"hetrun.Tuner: rank {dist.get_rank()} is not a member of the "
                               f"group {members}")
        self._size = dist.get_world_size(group)
        if global_batch < self._size * min_share:
            raise ValueError(f"hetrun.Tuner: global_batch={global_batch} is below the group size "
                             f"{self._size} x min_share {min_share} = {self._size * min_share}")
        cap = 0
        if max_share is not None:
            _positive_int("max_share", max_share, max(min_share, 1))
            if max_share * self._size < global_batch:
                raise ValueError(f"hetrun.Tuner: max_share={max_share} x group size {self._size}"
                                 f" cannot hold global_batch={global_batch}")
            cap = max_share
        if shares is not None:
            shares = self._check_shares(shares, global_batch, min_share)
        self._loop = _core.WindowLoop(
            global_batch, self._rank, self._size, window=window, warmup=warmup,
            min_share=min_share, cap=cap, tune=bool(tune), initial=shares or [],
            **controller_options)
        self.global_batch = global_batch
        self.window = window
        self.min_share = min_share
        self.reduction = reduction
        self._factor = (self._size if reduction == "mean" else 1) / global_batch
        self._backend = dist.get_backend(group)
        self._device = self._comm_device()
        if self._device.type == "cuda":
            self._clock = CudaStepClock(self._device)
        else:
            self._clock = CpuStepClock(_core.emulated_slowdown())
        self._heartbeat = _core.Heartbeat()
        self._set_shares(list(self._loop.shares))
        self._schedule: List[tuple] = []  # (first step, shares) decided, not yet in force
        self._samplers: "weakref.WeakSet" = weakref.WeakSet()
        self._step_index = 0
        self._open = False
        self._step_ctx = _Step(self)
        self._loss_samples = 0
        self._loss_calls = 0
        self._last_enter: Optional[float] = None
        self._compute_end: Optional[float] = None
        self._report: Optional[WindowReport] = None
        self.reports: List[WindowReport] = []
        self._hooked = model is not None
        if model is not None:
            self._register_hook(model)

    # ---- what a training loop reads ------------------------------------------------------
    @property
    def offset(self) -> int:
        """First sample of this rank's slice of this step's global batch."""
        return self._offset

    @property
    def share(self) -> int:
        """Samples this rank trains on this step."""
        return self._share

    @property
    def shares(self) -> List[int]:
        """Every member's share this step, in group order (the same list on every rank)."""
        return list(self._shares)

    @property
    def report(self) -> Optional[WindowReport]:
        """The last window's report (None before the first window closed)."""
        return self._report

    @property
    def group_rank(self) -> int:
        return self._rank

    @property
    def group_size(self) -> int:
        return self._size

    @property
    def step_index(self) -> int:
        """Steps completed so far (the index of the next or current step)."""
        return self._step_index

    def micro_batches(self, max_micro_batch: int) -> List[int]:
        """Sizes (as equal as possible, each <= max_micro_batch) that add up to this step's share,
        for gradient accumulation under model.no_sync() when a share does not fit at once."""
        _positive_int("max_micro_batch", max_micro_batch, 1)
        share = self._share
        _, count, _ = _core.plan_micro_batches(share, max_micro_batch)
        return [share // count + (1 if i < share % count else 0) for i in range(count)]

    def step(self) -> _Step:
        """`with tuner.step():` around this rank's forward and backward of the step."""
        return self._step_ctx

    def loss(self, per_sample: torch.Tensor) -> torch.Tensor:
        """sum(per_sample) x (group size / global batch) for reduction="mean" (DDP's mean
        all-reduce then yields exactly the global-batch mean gradient), x 1 / global batch for
        "sum". per_sample has one loss per sample of this rank's slice: shape [n]."""
        if not self._open:
            raise RuntimeError("tuner.loss() called outside `with tuner.step():`")
        if per_sample.dim() != 1:
            raise ValueError(f"tuner.loss(): per-sample losses must have shape [n], got "
                             f"{tuple(per_sample.shape)}")
        count = per_sample.shape[0]
        self._loss_samples += count
        self._loss_calls += 1
        if self._loss_samples > self._share:
            raise ValueError(f"tuner.loss(): {self._loss_samples} samples this step, but this "
                             f"rank's share is {self._share} (slice [{self._offset}, "
                             f"{self._offset + self._share}))")
        return per_sample.sum() * self._factor

    def shares_at(self, step: int) -> List[int]:
        """The split in force at `step` (>= the current step) as far as decided now."""
        shares = self._shares
        for first, decided in self._schedule:
            if first <= step:
                shares = decided
        return list(shares)

    # ---- internals -----------------------------------------------------------------------
    @staticmethod
    def _group_of(model, group):
        if model is None:
            return group
        if not isinstance(model, torch.nn.parallel.DistributedDataParallel):
            raise ValueError(f"hetrun.Tuner: model= must be a DistributedDataParallel module, "
                             f"got {type(model).__name__}")
        if group is not None and group is not model.process_group:
            raise ValueError("hetrun.Tuner: group= differs from model.process_group")
        return model.process_group

    @staticmethod
    def _check_shares(shares, batch: int, min_share: int) -> List[int]:
        shares = [int(s) for s in shares]
        if sum(shares) != batch or any(s < min_share for s in shares):
            raise ValueError(f"hetrun.Tuner: shares={shares} must add up to global_batch={batch}"
                             f" with each >= min_share={min_share}")
        return shares

    def _comm_device(self) -> torch.device:
        if self._backend == "nccl" or (torch.cuda.is_available() and "nccl" in self._backend):
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")

    def _set_shares(self, shares: List[int]) -> None:
        self._shares = shares
        self._offset = sum(shares[: self._rank])
        self._share = shares[self._rank]

    def _register_hook(self, model) -> None:
        existing = model._get_ddp_logging_data().get("comm_hook", "")
        if existing:
            raise ValueError(f"hetrun.Tuner: the model already has a DDP communication hook "
                             f"({existing}); the tuner registers its own (see model=)")
        model.register_comm_hook(self._group, self._comm_hook)

    def _comm_hook(self, group, bucket):
        # Runs in backward for each gradient bucket; the last bucket ends this rank's compute.
        if bucket.is_last() and self._open:
            self._compute_end = self._clock.mark_compute_end()
        tensor = bucket.buffer()
        if self.reduction == "mean":
            tensor.div_(self._size)
        work = dist.all_reduce(tensor, group=group, async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0])

    def _enter(self) -> None:
        if self._open:
            raise RuntimeError(f"tuner.step() entered while step {self._step_index} is still open "
                               f"(nested, or its `with` block was not exited)")
        self._open = True
        self._loss_samples = self._loss_calls = 0
        self._compute_end = None
        now = time.perf_counter()
        self._step_ms = (now - self._last_enter) * 1000.0 if self._last_enter else None
        self._last_enter = now
        self._clock.start(self._share)

    def _exit(self, failed: bool) -> None:
        self._open = False
        if failed:
            return
        if self._loss_calls and self._loss_samples != self._share:
            raise ValueError(f"tuner.loss() covered {self._loss_samples} samples this step, but "
                             f"this rank's share is {self._share} (slice [{self._offset}, "
                             f"{self._offset + self._share}))")
        if not self._hooked and not self._clock.compute_ended:
            self._clock.mark_compute_end()
        measured = self._clock.finish()
        now = time.perf_counter()
        wait_ms = (now - self._compute_end) * 1000.0 if self._compute_end else 0.0
        step_ms = self._step_ms if self._step_ms is not None else (now - self._last_enter) * 1e3
        t_hook = time.perf_counter()
        self._heartbeat.beat()
        hook_ms = (time.perf_counter() - t_hook) * 1000.0
        record = self._loop.close_step(measured, step_ms, wait_ms, hook_ms)
        self._step_index += 1
        if record is not None:
            self._close_window(record)
        while self._schedule and self._schedule[0][0] <= self._step_index:
            self._set_shares(list(self._schedule.pop(0)[1]))

    def _close_window(self, record: bytes) -> None:
        # One all-gather of (this rank's window record, the first step its loaders have not
        # produced yet): new shares apply from the first step no rank's sampler has produced.
        pending = self._step_index
        for sampler in self._samplers:
            pending = max(pending, sampler.next_step)
        payload = record + struct.pack("<q", pending)
        mine = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(self._device)
        parts = [torch.empty_like(mine) for _ in range(self._size)]
        dist.all_gather(parts, mine, group=self._group)
        gathered = bytes(torch.cat(parts).cpu().tolist())
        width, stride = _core.RANK_WINDOW_BYTES, len(payload)
        raw = [gathered[r * stride:(r + 1) * stride] for r in range(self._size)]
        first_step = max(struct.unpack("<q", r[width:])[0] for r in raw)
        report = self._loop.apply_gathered(b"".join(r[:width] for r in raw))
        self._report = build_report(report, self.global_batch, self.min_share, self._shares,
                                    first_step)
        self.reports.append(self._report)
        latest = self._schedule[-1][1] if self._schedule else self._shares
        if list(report["shares_next"]) != list(latest):
            self._schedule.append((first_step, list(report["shares_next"])))

    def _attach_sampler(self, sampler) -> None:
        self._samplers.add(sampler)

    def mark_compute_end(self) -> None:
        """Ends this step's timed compute now (a CUDA event on GPU): for integrations that own
        the DDP communication hook (hetrun.integrations) and call it from the hook's last bucket,
        as the tuner's own hook does. Outside an open step it does nothing."""
        if self._open:
            self._compute_end = self._clock.mark_compute_end()
