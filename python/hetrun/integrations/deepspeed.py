"""hetrun.integrations.deepspeed.ZeroBalance: hetrun's balancing in a DeepSpeed ZeRO engine loop
(docs/how-to/deepspeed.md).

DeepSpeed's own loop, with the lines hetrun adds or changes marked:

    balance = ZeroBalance(ds_config, window=10)                                         # +
    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=balance.config,  # config
                                                   model_parameters=model.parameters())
    balance.attach(engine)                                                              # +
    loader = balance.dataloader(dataset, collate_fn=collate)                            # +
    for batch in loader:                  # this rank's micro-batches, step after step
        with balance.micro_step():                                                      # +
            loss = loss_fn(engine(batch))    # a mean over the micro-batch
            balance.backward(loss)           # instead of engine.backward(loss)
            engine.step()

The global batch B is the config's train_micro_batch_size_per_gpu x accumulation steps k x world
size (or its train_batch_size). Every optimizer step the tuner splits B over the ranks from each
rank's measured compute (the collectives' waits excluded, hetrun/engines/deepspeed.py); a rank
trains on its share n_r as micro-batches (sizes differing by at most one, k of them, more when
max_micro_batch= or the memory model caps them: under ZeRO-2 and 3, which reduce on every
backward, the count is job-wide). balance.backward scales the micro-batch's mean loss by
m x W / B and calls engine.backward(..., scale_wrt_gas=False): DeepSpeed's average over the W
ranks then yields exactly the mean gradient of the global batch, whatever the split, for ZeRO
0-3; DeepSpeed's gradient clipping then clips that same gradient. The micro_step() context sets
DeepSpeed's accumulation boundary on each step's last micro-batch (managed accumulation), or,
with "managed_gradient_accumulation": false, call engine.step() only when balance.last_micro is
True (the caller owns the boundary).

Each rank's config (balance.config) states its micro-batch size at the even start, the
accumulation count, a train_batch_size consistent with them (DeepSpeed checks only that
product, on each rank alone) and gradient_clipping (DeepSpeed clips at 1.0 when the key is
absent: the value is written out). A re-plan (new shares, or a new micro-batch count) updates the
engine with set_train_micro_batch_size / set_train_batch_size at the step boundary; DeepSpeed's
sample counter (engine.global_samples) and throughput timer count B per step, not the rank's
product. Not covered: DeepSpeed's own dataloader (pass no training_data), the pipeline engine,
model/sequence parallelism (ValueError), curriculum / data-efficiency sampling.
"""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Dict, List, Optional

import torch
import torch.distributed as dist

from hetrun._tuner import Tuner
from hetrun.engines.deepspeed import zero_stage
from hetrun.integrations import _steps

_CLIPPING_DEFAULT = 1.0  # deepspeed/runtime/constants.py GRADIENT_CLIPPING_DEFAULT (0.19)


def _load(config) -> dict:
    if isinstance(config, str):
        with open(config) as f:
            return json.load(f)
    if not isinstance(config, dict):
        raise ValueError(f"ZeroBalance: config must be a dict or a JSON file path, got "
                         f"{type(config).__name__}")
    return copy.deepcopy(config)


def _int_of(config: dict, key: str) -> Optional[int]:
    value = config.get(key)
    if value is None:
        return None
    if value == "auto" or isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"ZeroBalance: config[{key!r}]={value!r} must be an integer >= 1 "
                         f"(\"auto\" is the HF Trainer's; use HetrunTrainer there)")
    return value


def global_batch_of(config: dict, world: int) -> tuple:
    """(B, k, even micro-batch) from a DeepSpeed config, as DeepSpeed resolves them."""
    micro = _int_of(config, "train_micro_batch_size_per_gpu")
    steps = _int_of(config, "gradient_accumulation_steps")
    total = _int_of(config, "train_batch_size")
    if micro is not None and steps is not None:
        if total is not None and total != micro * steps * world:
            raise ValueError(f"ZeroBalance: train_batch_size={total} != micro {micro} x "
                             f"accumulation {steps} x world {world}")
        return micro * steps * world, steps, micro
    steps = steps or 1
    if total is None:
        if micro is None:
            raise ValueError("ZeroBalance: the config sets neither train_batch_size nor "
                             "train_micro_batch_size_per_gpu")
        return micro * steps * world, steps, micro
    if micro is None:
        if total % (steps * world):
            raise ValueError(f"ZeroBalance: train_batch_size={total} is not a multiple of "
                             f"accumulation {steps} x world {world}")
        return total, steps, total // (steps * world)
    if total % (micro * world):
        raise ValueError(f"ZeroBalance: train_batch_size={total} is not a multiple of micro "
                         f"{micro} x world {world}")
    return total, total // (micro * world), micro


def rank_config(config, world: int) -> dict:
    """This rank's DeepSpeed config at the even start: micro-batch, accumulation count and
    train_batch_size stated and consistent, gradient_clipping explicit."""
    config = _load(config)
    batch, steps, micro = global_batch_of(config, world)
    config.update(train_micro_batch_size_per_gpu=-(-batch // (world * steps)),
                  gradient_accumulation_steps=steps)
    config["train_batch_size"] = config["train_micro_batch_size_per_gpu"] * steps * world
    config.setdefault("gradient_clipping", _CLIPPING_DEFAULT)
    return config


class _MicroBatchSampler(torch.utils.data.Sampler):
    """This rank's micro-batches, step by step; each step's plan is recorded for micro_step()."""

    def __init__(self, balance: "ZeroBalance", dataset_len: int, shuffle: bool, seed: int):
        tuner = balance.tuner
        self.balance = balance
        # ZeroBalance plans DeepSpeed's micro-batches per step itself: the last partial global
        # batch is not trained yet (drop_last), as before.
        self.plan = _steps.StepPlan(dataset_len, tuner.global_batch, 1, tuner.group_rank,
                                    shuffle, seed, drop_last=True)
        self.epoch = 0
        self.next_step = tuner.step_index
        tuner._attach_sampler(self)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.plan.steps_per_epoch * self.balance.accumulation

    def __iter__(self):
        epoch, self.epoch = self.epoch, self.epoch + 1
        tuner = self.balance.tuner
        order = self.plan.order(epoch)
        first = tuner.step_index
        for q in range(self.plan.steps_per_epoch):
            step = first + q
            shares = tuner.shares_at(step)
            sizes = self.balance.plan_sizes(shares, step)
            self.balance._plans[step] = sizes
            self.next_step = step + 1
            at = q * self.plan.global_batch + sum(shares[:tuner.group_rank])
            for size in sizes:
                yield order[at:at + size]
                at += size


def _no_rows(batch):
    if isinstance(batch, torch.Tensor):
        return batch[:0]
    if isinstance(batch, dict):
        return type(batch)({k: _no_rows(v) for k, v in batch.items()})
    if isinstance(batch, (list, tuple)):
        return type(batch)(_no_rows(v) for v in batch)
    return batch


class _EmptyAware:
    """The collate function, plus an empty micro-batch (under ZeRO-2/3 a rank whose share is
    below the job-wide micro-batch count still runs every forward and backward, on no samples):
    one sample collated, then cut to zero rows."""

    def __init__(self, dataset, collate) -> None:
        self.dataset, self.collate = dataset, collate

    def __call__(self, items):
        if items:
            return self.collate(items)
        return _no_rows(self.collate([self.dataset[0]]))


class ZeroBalance:
    """The rank's config, the tuner, the sampler and the micro-step context (module doc).

    config: a DeepSpeed config (dict or JSON path). window, tune and the other keywords go to
    hetrun.Tuner (bytes_per_sample=, memory_ceiling_bytes=: the memory model that caps the
    micro-batches, hetrun/_memory.py). max_micro_batch: a cap on every micro-batch (the same on
    every rank); a share above the cap becomes more micro-batches.
    """

    def __init__(self, config, window: int = 10, tune: bool = True,
                 max_micro_batch: Optional[int] = None, **tuner_options) -> None:
        if not dist.is_initialized():
            raise RuntimeError("ZeroBalance: torch.distributed is not initialised (call "
                               "deepspeed.init_distributed() first, or launch with hetrun run)")
        if max_micro_batch is not None and (isinstance(max_micro_batch, bool) or
                                            not isinstance(max_micro_batch, int) or
                                            max_micro_batch < 1):
            raise ValueError(f"ZeroBalance: max_micro_batch={max_micro_batch!r} must be an "
                             f"integer >= 1")
        self.world = dist.get_world_size()
        self.config = rank_config(config, self.world)
        self.global_batch, self.accumulation, _ = global_batch_of(self.config, self.world)
        _steps.check_shares_fit(self.global_batch, self.world, self.accumulation,
                                "train_micro_batch_size_per_gpu x world size x accumulation")
        self.window, self.tune, self.max_micro_batch = window, tune, max_micro_batch
        self._tuner_options = tuner_options
        self.engine = None
        self.tuner: Optional[Tuner] = None
        self._plans: Dict[int, List[int]] = {}
        self._sizes: List[int] = []
        self._micro = 0
        self._ctx = None
        self._samples_before = 0

    # ---- setup -----------------------------------------------------------------------------
    def attach(self, engine) -> Tuner:
        """After deepspeed.initialize(config=balance.config): the tuner, timing this engine."""
        want = (self.config["train_micro_batch_size_per_gpu"],
                self.config["gradient_accumulation_steps"])
        have = (engine.train_micro_batch_size_per_gpu(), engine.gradient_accumulation_steps())
        if have != want:
            raise ValueError(f"ZeroBalance.attach: the engine runs micro-batch x accumulation "
                             f"{have}, not balance.config's {want}: pass config=balance.config "
                             f"to deepspeed.initialize")
        if engine.training_dataloader is not None:
            raise ValueError("ZeroBalance.attach: deepspeed.initialize was given training_data "
                             "(DeepSpeed's even DistributedSampler); use balance.dataloader()")
        self.engine = engine
        self.stage = zero_stage(engine)
        self.managed = bool(engine.managed_gradient_accumulation())
        self.tuner = Tuner(self.global_batch, window=self.window, model=engine,
                           min_share=self.accumulation, tune=self.tune, **self._tuner_options)
        self._timing = self.tuner._engine
        engine.tput_timer.batch_size = self.global_batch
        return self.tuner

    def dataloader(self, dataset, shuffle: bool = True, seed: int = 0, **loader_options):
        """A DataLoader yielding this rank's micro-batches, step after step (other keywords,
        collate_fn, num_workers, ..., go to it)."""
        if self.tuner is None:
            raise RuntimeError("ZeroBalance.dataloader: call attach(engine) first")
        if isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__len__"):
            raise ValueError(f"ZeroBalance.dataloader: {type(dataset).__name__} is an "
                             f"IterableDataset: the balancing splits a global batch of a "
                             f"map-style dataset")
        for key in ("batch_size", "shuffle", "sampler", "batch_sampler", "drop_last"):
            if key in loader_options:
                raise ValueError(f"ZeroBalance.dataloader: {key}= is the sampler's to set")
        sampler = _MicroBatchSampler(self, len(dataset), shuffle, seed)
        collate = loader_options.pop("collate_fn", None) or \
            torch.utils.data.default_collate
        return torch.utils.data.DataLoader(dataset, batch_sampler=sampler,
                                           collate_fn=_EmptyAware(dataset, collate),
                                           **loader_options)

    # ---- the plan ---------------------------------------------------------------------------
    def micro_cap(self) -> Optional[int]:
        caps = [c for c in (self.max_micro_batch, self.tuner.max_micro_batch) if c is not None]
        return min(caps) if caps else None

    def plan_sizes(self, shares: List[int], step: int) -> List[int]:
        """This rank's micro-batch sizes for step `step` split as `shares`: k of them, more
        where the cap needs (job-wide under ZeRO-2/3, where every backward reduces)."""
        cap, k = self.micro_cap(), self.accumulation
        if self.tuner._memory.measuring:  # bytes_per_sample="measure": step 1 at half the size
            cap = self.tuner._memory.probe_cap(step, min(cap or max(shares), max(shares)))
        mine = shares[self.tuner.group_rank]
        if cap is None:
            count = k
        elif self.stage >= 2:
            count = max(k, max(-(-s // cap) for s in shares))
        else:
            count = max(k, -(-mine // cap))
        return _steps.micro_sizes(mine, count)

    @property
    def last_micro(self) -> bool:
        """Inside micro_step(): whether this is the step's last micro-batch."""
        return self._micro == len(self._sizes) - 1

    @property
    def loss_factor(self) -> float:
        """The factor of this micro-batch's mean loss (module doc)."""
        return _steps.loss_factor(self._sizes[self._micro], self.world, self.global_batch)

    # ---- the loop ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def micro_step(self):
        """Around one micro-batch's forward, balance.backward and engine.step()."""
        first = self._micro == 0
        if first:
            self._begin_step()
        else:
            self._timing.enter()
        if self.managed:
            self.engine.set_gradient_accumulation_boundary(self.last_micro)
        try:
            yield self
        except BaseException as error:
            self._micro, ctx, self._ctx = 0, self._ctx, None
            if ctx is not None:
                ctx.__exit__(type(error), error, error.__traceback__)
            raise
        if self.last_micro:
            self._micro, ctx, self._ctx = 0, self._ctx, None
            ctx.__exit__(None, None, None)
            self.engine.global_samples = self._samples_before + self.global_batch
        else:
            self._micro += 1
            self._timing.leave()

    def backward(self, loss: torch.Tensor):
        """engine.backward of this micro-batch's mean loss scaled for exactness."""
        if self._ctx is None:
            raise RuntimeError("ZeroBalance.backward called outside `with balance.micro_step():`")
        factor = self.loss_factor
        if factor == 0.0:  # an empty micro-batch: its mean is NaN, its gradient none
            loss = torch.nan_to_num(loss, nan=0.0)
        return self.engine.backward(loss * factor, scale_wrt_gas=False)

    def _begin_step(self) -> None:
        step = self.tuner.step_index
        sizes = self._plans.pop(step, None)
        if sizes is None:
            raise RuntimeError(f"ZeroBalance.micro_step: no micro-batches planned for step "
                               f"{step}: iterate balance.dataloader() and enter one micro_step "
                               f"per micro-batch it yields")
        self._sizes = sizes
        largest, count = max(max(sizes), 1), len(sizes)
        engine = self.engine
        if (engine.train_micro_batch_size_per_gpu(), engine.gradient_accumulation_steps()) != \
                (largest, count):  # a re-plan, at the step boundary
            engine.set_train_micro_batch_size(largest)
            engine.set_train_batch_size(largest * count * self.world)
        engine.tput_timer.batch_size = self.global_batch
        self._samples_before = engine.global_samples
        self._ctx = self.tuner.step()
        self._ctx.__enter__()
        self.tuner._micro = (largest, count)  # for the window report
