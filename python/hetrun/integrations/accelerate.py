"""hetrun.integrations.accelerate.BalancedSteps: hetrun's balancing in an Accelerate loop.

Accelerate's own example loop, with the lines hetrun adds marked:

    accelerator = Accelerator(dataloader_config=DataLoaderConfiguration(even_batches=False))  # +
    model, optimizer = accelerator.prepare(model, optimizer)
    balance = BalancedSteps(accelerator, model, batch_size=8, window=10)                      # +
    loader = accelerator.prepare(balance.dataloader(dataset, collate_fn=collate))             # +
    for batch in loader:
        with balance.step():                                                                  # +
            loss = loss_fn(model(batch))        # a mean over this rank's batch
            accelerator.backward(loss)
        optimizer.step(); optimizer.zero_grad()

batch_size is the per-device micro-batch of the even split; each micro-step's global batch of
batch_size x world size samples is split by the tuner from each rank's measured compute (the same
split for the k micro-steps of one optimizer step with accumulate=k and accelerator.accumulate).
The samples after the last full micro-step are one more, smaller micro-step, split in the tuner's
proportions (dataloader(..., drop_last=True) drops them).
The sampler yields every rank's slice in rank order, because Accelerate's batch-sampler sharding
hands rank i every n-th batch (hence split_batches=False and even_batches=False: checked, a
ValueError names the setting); the weighted DDP communication hook (_ddp_hook) keeps the update
exactly the even split's. The model must be prepared first (DistributedDataParallel); an
IterableDataset is a ValueError (there is no global batch to split).
"""

from __future__ import annotations

import contextlib
from typing import Optional

import torch
import torch.distributed as dist

from hetrun._tuner import Tuner
from hetrun.integrations import _ddp_hook, _steps


class _RankOrderSampler(torch.utils.data.Sampler):
    """Per micro-step, every rank's slice of its global batch, in rank order."""

    def __init__(self, balance: "BalancedSteps", dataset_len: int, shuffle: bool, seed: int,
                 drop_last: bool = False):
        self.balance = balance
        self.plan = _steps.StepPlan(dataset_len, balance.tuner.global_batch, 1, 0, shuffle, seed,
                                    drop_last=drop_last, group_size=balance.tuner.group_size)
        balance._plan = self.plan
        self.epoch = 0
        self.next_step = 0
        balance.tuner._attach_sampler(self)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.plan.steps_per_epoch * self.balance.tuner.group_size

    def __iter__(self):
        tuner, k = self.balance.tuner, self.balance.accumulate
        order = self.plan.order(self.epoch)
        steps_per_epoch = -(-self.plan.steps_per_epoch // k)
        self.balance._q = 0  # the loop's first micro-step of this epoch comes next
        for q in range(self.plan.steps_per_epoch):
            step = max(self.epoch * steps_per_epoch + q // k, tuner.step_index)
            self.next_step = max(self.next_step, step + 1)
            shares = self.plan.shares_for(q, tuner.shares_at(step))
            lo = q * self.plan.global_batch
            for share in shares:
                yield order[lo:lo + share]
                lo += share


class BalancedSteps:
    """The tuner, the batch sampler and the step context of a balanced Accelerate loop."""

    def __init__(self, accelerator, model, batch_size: int, window: int = 10, tune: bool = True,
                 accumulate: Optional[int] = None, **tuner_options) -> None:
        if str(accelerator.distributed_type).endswith("DEEPSPEED"):
            raise ValueError("BalancedSteps: the Accelerator runs DeepSpeed (deepspeed_plugin=): "
                             "its ZeRO engine reduces gradients itself, which BalancedSteps' DDP "
                             "hook cannot weight. Use HetrunTrainer (hetrun.integrations."
                             "transformers) with TrainingArguments(deepspeed=...), or "
                             "ZeroBalance (hetrun.integrations.deepspeed) around the DeepSpeed "
                             "engine directly (docs/how-to/deepspeed.md)")
        if accelerator.split_batches:
            raise ValueError("BalancedSteps: the Accelerator has split_batches=True; the "
                             "balancing needs split_batches=False (each rank its own batch)")
        if accelerator.even_batches:
            raise ValueError("BalancedSteps: the Accelerator has even_batches=True; pass "
                             "dataloader_config=DataLoaderConfiguration(even_batches=False) "
                             "(the ranks' batches differ in size)")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"BalancedSteps: batch_size={batch_size!r} must be an integer >= 1")
        if not dist.is_initialized():
            raise RuntimeError("BalancedSteps: torch.distributed is not initialised (launch with "
                               "hetrun run, torchrun or accelerate launch)")
        self.accelerator = accelerator
        self.accumulate = accumulate or accelerator.gradient_accumulation_steps
        world = dist.get_world_size()
        self.tuner = Tuner(batch_size * world, window=window, reduction="sum", tune=tune,
                           **tuner_options)
        _ddp_hook.register(model, self.tuner, lambda: self._weight)
        self._micro = 0
        self._ctx = None
        self._plan: Optional[_steps.StepPlan] = None  # the sampler's
        self._q = 0  # this micro-step's index in the epoch (the sampler resets it)
        self._weight = 0.0

    def dataloader(self, dataset, shuffle: bool = True, seed: int = 0, **loader_options):
        """A DataLoader whose batch sampler yields every rank's slice per micro-step (to be
        passed to accelerator.prepare); other keywords (collate_fn, num_workers, ...) go to it."""
        if isinstance(dataset, torch.utils.data.IterableDataset) or not hasattr(dataset, "__len__"):
            raise ValueError(f"BalancedSteps.dataloader: {type(dataset).__name__} is an "
                             f"IterableDataset: the balancing splits a global batch of a "
                             f"map-style dataset")
        drop_last = bool(loader_options.pop("drop_last", False))
        for key in ("batch_size", "shuffle", "sampler", "batch_sampler"):
            if key in loader_options:
                raise ValueError(f"BalancedSteps.dataloader: {key}= is the sampler's to set")
        sampler = _RankOrderSampler(self, len(dataset), shuffle, seed, drop_last)
        return torch.utils.data.DataLoader(dataset, batch_sampler=sampler, **loader_options)

    @contextlib.contextmanager
    def step(self):
        """Around one micro-step's forward and backward; a tuner step spans `accumulate` of
        them (one optimizer step)."""
        tuner, plan, q = self.tuner, self._plan, self._q
        self._q += 1
        shares = tuner.shares_at(tuner.step_index)
        if plan is not None:  # the weight of a smaller last micro-step is its own share of it
            shares = plan.shares_for(q, shares)
        self._weight = shares[tuner.group_rank] / sum(shares)
        if self._micro == 0:
            if plan is not None and plan.is_last_partial(q) and q % self.accumulate == 0:
                tuner._next_step_shares(shares)  # the step is that smaller micro-step alone
            self._ctx = self.tuner.step()
            self._ctx.__enter__()
        try:
            yield self.tuner
        except BaseException as error:
            self._micro, ctx, self._ctx = 0, self._ctx, None
            ctx.__exit__(type(error), error, error.__traceback__)
            raise
        self._micro += 1
        if self._micro >= self.accumulate:
            self._micro, ctx, self._ctx = 0, self._ctx, None
            ctx.__exit__(None, None, None)
