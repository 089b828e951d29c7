"""hetrun.Tuner: each rank's share of the global batch from its measured compute times, with
exact gradients (docs/ARCHITECTURE.md §5.2, §5.3, §5.8). Windows, warm-up, cost model and solver
are the C++ core's (hetrun._core.WindowLoop); this file scales the losses, plans micro-batches and
exchanges the records. Where a rank's compute ends and its waiting begins is the engine's
(hetrun.engines: plain: no model, ddp: DistributedDataParallel, fsdp: FSDP2's fully_shard,
deepspeed: a DeepSpeedEngine's ZeRO stages); engine_for here picks one, so no engine imports
another."""

from __future__ import annotations

import struct
import time
import weakref
from typing import List, Optional, Union

import torch
import torch.distributed as dist

from hetrun import _core
from hetrun._checks import positive_int as _positive_int
from hetrun._memory import Memory
from hetrun._report import WindowReport, build_report
from hetrun.engines.base import Engine
from hetrun.engines.ddp import DdpEngine
from hetrun.engines.deepspeed import DeepSpeedZeroEngine, is_deepspeed_engine
from hetrun.engines.fsdp import FsdpEngine, is_fsdp1, is_fsdp2
from hetrun.engines.plain import PlainEngine

_EXTRA = "<qqqq"  # after the core's record: next unproduced step, micro-batch size, count, fixed

_REDUCTIONS = ("mean", "sum")


def engine_for(model, group) -> Engine:
    """The engine for Tuner(model=...): ValueError names what was given when it is none."""
    if model is None:
        return PlainEngine(group)
    if isinstance(model, torch.nn.parallel.DistributedDataParallel):
        return DdpEngine(model, group)
    if is_fsdp1(model):
        raise ValueError("hetrun.Tuner: model= is an FSDP1 FullyShardedDataParallel module; the "
                         "tuner supports FSDP2 (torch.distributed.fsdp.fully_shard) and "
                         "DistributedDataParallel")
    if is_fsdp2(model):
        return FsdpEngine(model, group)
    if is_deepspeed_engine(model):
        return DeepSpeedZeroEngine(model, group)
    raise ValueError(f"hetrun.Tuner: model= must be a DistributedDataParallel module, the "
                     f"module fully_shard returned (an FSDPModule) or a DeepSpeed engine, got "
                     f"{type(model).__name__}")


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
    model: a DistributedDataParallel module (the tuner registers a communication hook that
      marks this rank's last gradient bucket as the end of its compute region, then all-reduces
      like DDP's default hook, dividing by the group size for reduction="mean"), or the root
      module fully_shard returned (FSDP2, HSDP included: every unit's compute is timed between
      FSDP's hooks, see hetrun/engines/fsdp.py), or a DeepSpeed engine (ZeRO 0-3: compute
      between the collectives of deepspeed.comm, hetrun/engines/deepspeed.py; driven by
      hetrun.integrations.deepspeed.ZeroBalance). Without model, the step() block must end before
      any collective (users who all-reduce themselves).
    warmup: steps no fit sees. min_share / max_share: bounds of every rank's share.
    group: the process group (default WORLD; with model=, model.process_group or the FSDP
      mesh's data-parallel group, which group= must then equal).
    reduction: "mean" (DDP's mean all-reduce; loss factor group_size / B) or "sum" (the user's
      own SUM all-reduce; loss factor 1 / B). tune=False keeps the initial split (a baseline).
    shares: the initial split (default as even as possible).
    bytes_per_sample: activation bytes per sample (the fixed part excluded): micro_batches()
      then caps each micro-batch so that fixed + size x bytes_per_sample stays within
      memory_ceiling_bytes (default HETRUN_MEMORY_CEILING_BYTES); the fixed part is the largest
      torch.cuda.memory_allocated() any rank saw at a step's start (0 on CPU). Pass it on every
      rank alike (one all-gather at construction). "measure" (CUDA only) fits it instead from
      the first two steps' torch.cuda.max_memory_allocated(), the second run at half the
      micro-batch size (hetrun/_memory.py); memory_model says what the cap comes from.
    Other keywords go to the controller and cost model by their C++ names: dead_band,
    noise_sigmas, min_gain, max_step, max_relative_step, forgetting, max_points,
    min_relative_spread, change_sigmas, change_floor, local_width, min_slope_fraction,
    slope_sigmas (hetrun/tuner/controller.h, cost_model.h).
    """

    def __init__(self, global_batch: int, window: int = 10, model=None, *, warmup: int = 2,
                 min_share: int = 1, max_share: Optional[int] = None, group=None,
                 reduction: str = "mean", tune: bool = True,
                 shares: Optional[List[int]] = None, bytes_per_sample: Union[int, str, None] = None,
                 memory_ceiling_bytes: Optional[int] = None, **controller_options) -> None:
        _positive_int("global_batch", global_batch, 1)
        _positive_int("window", window, 1)
        _positive_int("warmup", warmup, 0)
        _positive_int("min_share", min_share, 0)
        if reduction not in _REDUCTIONS:
            raise ValueError(f"hetrun.Tuner: reduction={reduction!r} must be 'mean' or 'sum'")
        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError("hetrun.Tuner needs torch.distributed initialised: call "
                               "dist.init_process_group() first")
        self._engine = engine_for(model, group)
        group = self._engine.group
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
        self._memory = Memory(bytes_per_sample, memory_ceiling_bytes, self._device)
        self._fixed = self._memory.gather_fixed(self._group, self._size, self._device)
        self._memory.largest(self._fixed)  # ValueError when not one sample fits
        self._slowdown = _core.emulated_slowdown_schedule()
        self._engine.setup(self._device, self._slowdown.whole_at(0), self._size, reduction)
        self._engine.set_slowdown(self._slowdown.whole_at(0), self._slowdown.per_sample_at(0))
        self._heartbeat = _core.Heartbeat()
        self._full_shares: Optional[List[int]] = None  # the split while a smaller step runs
        self._set_shares(list(self._loop.shares))
        self._schedule: List[tuple] = []  # (first step, shares, fixed bytes) not yet in force
        self._micro = (self._share, 1)  # this step's largest micro-batch and count
        self._samplers: "weakref.WeakSet" = weakref.WeakSet()
        self._step_index = 0
        self._open = False
        self._step_ctx = _Step(self)
        self._loss_samples = 0
        self._loss_calls = 0
        self._last_enter: Optional[float] = None
        self._report: Optional[WindowReport] = None
        self.reports: List[WindowReport] = []

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

    @property
    def engine(self) -> str:
        """What model= is: "plain" (none), "DDP", "FSDP2" or "DeepSpeed"."""
        return self._engine.name

    @property
    def max_micro_batch(self) -> Optional[int]:
        """The largest micro-batch that fits this rank's memory ceiling (bytes_per_sample=; the
        job's, or its GPU model's under --memory-ceiling model); None without a memory model."""
        return self._memory.largest(self._fixed)

    @property
    def memory_model(self) -> dict:
        """The cap's model: source ("declared", "measure" or None), per_sample and base bytes
        (per_sample None while "measure" has not fitted yet), ceiling, and fixed (job-wide)."""
        return dict(self._memory.describe(), fixed=self._fixed)

    def micro_batches(self, max_micro_batch: int) -> List[int]:
        """Sizes (as equal as possible, each <= max_micro_batch and <= the memory cap) that add
        up to this step's share, for gradient accumulation (no_sync() under DDP,
        set_requires_gradient_sync(False) on all but the last under FSDP2). Under FSDP2 the count
        is job-wide: every rank gets as many micro-batches as the rank that needs the most (some
        possibly empty), since each micro-batch's forward all-gathers. Pass the same
        max_micro_batch on every rank."""
        _positive_int("max_micro_batch", max_micro_batch, 1)
        most = max(max(self._shares), 1)

        def capped(memory_cap: Optional[int]) -> int:
            cap = max_micro_batch if memory_cap is None else min(max_micro_batch, memory_cap)
            return self._memory.probe_cap(self._step_index, min(cap, most))

        cap = capped(self.max_micro_batch)
        share = self._share
        if self._engine.lockstep_micro_batches:
            # Every rank's own cap (its ceiling: per model under --memory-ceiling model).
            caps = self._memory.largest_per_rank(self._fixed)
            if caps is None or len(caps) != len(self._shares):
                caps = [cap] * len(self._shares)
            else:
                caps = [capped(c) for c in caps]
            count = max(max(-(-s // c) for s, c in zip(self._shares, caps)), 1)
        else:
            _, count, _ = _core.plan_micro_batches(share, cap)
        sizes = [share // count + (1 if i < share % count else 0) for i in range(count)]
        self._micro = (max(sizes), count)
        return sizes

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
        factor = self._factor if self._full_shares is None else \
            self._factor * self.global_batch / self.step_batch
        return per_sample.sum() * factor

    @property
    def step_batch(self) -> int:
        """Samples of this step's global batch over the group: global_batch, or fewer for an
        epoch's last, smaller global batch (_next_step_shares)."""
        return sum(self._shares)

    def _next_step_shares(self, shares: List[int]) -> None:
        """The next step trains `shares` (an epoch's last, smaller global batch, in the tuner's
        proportions: hetrun.integrations._steps.scale_shares) instead of the split; its compute is
        measured at those sizes, and the split is back for the step after it."""
        if self._open:
            raise RuntimeError("hetrun.Tuner: a step's shares are set before it is entered")
        shares = [int(x) for x in shares]
        if len(shares) != self._size or any(x < 0 for x in shares) or sum(shares) < 1:
            raise ValueError(f"hetrun.Tuner: step shares {shares} for a group of {self._size}")
        if self._full_shares is None:
            self._full_shares = self._shares
        self._set_shares(shares)

    def shares_at(self, step: int) -> List[int]:
        """The split in force at `step` (>= the current step) as far as decided now (of a full
        global batch: a smaller last step's own shares are not the split)."""
        shares = self._full_shares if self._full_shares is not None else self._shares
        for first, decided, _ in self._schedule:
            if first <= step:
                shares = decided
        return list(shares)

    # ---- internals -----------------------------------------------------------------------
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

    def _enter(self) -> None:
        if self._open:
            raise RuntimeError(f"tuner.step() entered while step {self._step_index} is still open "
                               f"(nested, or its `with` block was not exited)")
        self._open = True
        self._loss_samples = self._loss_calls = 0
        self._micro = (self._share, 1)
        now = time.perf_counter()
        self._step_ms = (now - self._last_enter) * 1000.0 if self._last_enter else None
        self._last_enter = now
        self._memory.step_started()
        if not self._slowdown.constant:
            self._engine.set_slowdown(self._slowdown.whole_at(self._step_index),
                                      self._slowdown.per_sample_at(self._step_index))
        self._engine.begin_step(self._share)

    def _exit(self, failed: bool) -> None:
        self._open = False
        measured, wait_ms = self._engine.end_step()
        share, offset = self._share, self._offset
        if self._full_shares is not None:  # a smaller last global batch: back to the split
            self._set_shares(self._full_shares)
            self._full_shares = None
        if failed:
            return
        if self._loss_calls and self._loss_samples != share:
            raise ValueError(f"tuner.loss() covered {self._loss_samples} samples this step, but "
                             f"this rank's share is {share} (slice [{offset}, "
                             f"{offset + share}))")
        self._engine.check_step(self._step_index)
        now = time.perf_counter()
        step_ms = self._step_ms if self._step_ms is not None else (now - self._last_enter) * 1e3
        t_hook = time.perf_counter()
        self._heartbeat.beat()
        hook_ms = (time.perf_counter() - t_hook) * 1000.0
        record = self._loop.close_step(measured, step_ms, wait_ms, hook_ms)
        self._memory.step_ended(self._step_index, self._micro[0], self._group, self._size,
                                self._device)
        self._step_index += 1
        if record is not None:
            self._close_window(record)
        while self._schedule and self._schedule[0][0] <= self._step_index:
            _, shares, self._fixed = self._schedule.pop(0)
            self._set_shares(list(shares))

    def _close_window(self, record: bytes) -> None:
        # One all-gather of (this rank's window record, the first step its loaders have not
        # produced yet): new shares apply from the first step no rank's sampler has produced.
        pending = self._step_index
        for sampler in self._samplers:
            pending = max(pending, sampler.next_step)
        payload = record + struct.pack(_EXTRA, pending, *self._micro, self._memory.local_fixed)
        mine = torch.frombuffer(bytearray(payload), dtype=torch.uint8).to(self._device)
        parts = [torch.empty_like(mine) for _ in range(self._size)]
        dist.all_gather(parts, mine, group=self._group)
        gathered = bytes(torch.cat(parts).cpu().tolist())
        width, stride = _core.RANK_WINDOW_BYTES, len(payload)
        raw = [gathered[r * stride:(r + 1) * stride] for r in range(self._size)]
        extra = [struct.unpack(_EXTRA, r[width:]) for r in raw]
        first_step = max(e[0] for e in extra)
        fixed = max(e[3] for e in extra)
        report = self._loop.apply_gathered(b"".join(r[:width] for r in raw))
        self._report = build_report(report, self.global_batch, self.min_share, self._shares,
                                    first_step, [e[1] for e in extra], [e[2] for e in extra])
        self.reports.append(self._report)
        latest = self._schedule[-1] if self._schedule else (0, self._shares, self._fixed)
        if list(report["shares_next"]) != list(latest[1]) or fixed > latest[2]:
            self._schedule.append((first_step, list(report["shares_next"]), max(fixed, latest[2])))

    def _attach_sampler(self, sampler) -> None:
        self._samplers.add(sampler)

    def mark_compute_end(self) -> None:
        """Ends this step's timed compute now (a CUDA event on GPU): for integrations that own
        the DDP communication hook (hetrun.integrations; the tuner then has no model=) and call
        it from the hook's last bucket, as the tuner's own DDP hook does. Outside an open step it
        does nothing."""
        if self._open:
            self._engine.mark_compute_end()
