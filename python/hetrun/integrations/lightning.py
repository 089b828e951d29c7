"""hetrun.integrations.lightning.HetrunBalancing: hetrun's balancing as a Lightning callback.

    balancing = HetrunBalancing(tune=True, window=10)
    loader = DataLoader(dataset, batch_sampler=balancing.batch_sampler(len(dataset), batch_size=8),
                        collate_fn=...)                      # instead of batch_size= / shuffle=
    trainer = L.Trainer(strategy="ddp", callbacks=[balancing], use_distributed_sampler=False)
    trainer.fit(module, loader)                             # balancing.tuner: the hetrun.Tuner

What the user changes is what any custom distributed batch sampler needs: the DataLoader takes
the callback's batch_sampler, and the Trainer gets use_distributed_sampler=False (Lightning would
otherwise replace the sampler with a DistributedSampler; setup() checks and says so). batch_size
is the per-device micro-batch of the even split: each micro-step has a global batch of
batch_size x world size samples, which the tuner splits by measured speed (the same split for the
k micro-steps of one optimizer step, accumulate_grad_batches = k); one tuner step is one
optimizer step. The samples after the last full micro-step are one more, smaller micro-step,
split in the tuner's proportions (batch_sampler(..., drop_last=True) drops them). The loss of training_step must be a mean over its batch (Lightning's usual);
the callback's DDP communication hook weights each rank's gradient bucket by its share of the
micro-step's global batch and all-reduces with SUM, so the update is exactly the even split's
(hetrun.integrations._ddp_hook). Needs strategy="ddp" (DDPStrategy); FSDP and DeepSpeed
strategies are not balanced yet (ValueError at setup).
"""

from __future__ import annotations

import sys
from typing import Optional

import lightning.pytorch as pl
import torch
import torch.distributed as dist

from hetrun._tuner import Tuner
from hetrun.integrations import _ddp_hook, _steps


class _MicroStepSampler(torch.utils.data.Sampler):
    """Per micro-step, this rank's share of that micro-step's global batch."""

    def __init__(self, balancing: "HetrunBalancing", dataset_len: int, batch_size: int,
                 shuffle: bool, seed: int, drop_last: bool = False) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"HetrunBalancing.batch_sampler: batch_size={batch_size!r} must be an "
                             f"integer >= 1")
        if not dist.is_initialized():
            self.group_size, self.rank = None, None  # known at setup(), once DDP has started
        self.balancing = balancing
        self.dataset_len = dataset_len
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        self.epoch = 0
        self.next_step = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def _plan(self) -> _steps.StepPlan:
        world = dist.get_world_size() if dist.is_initialized() else 1
        rank = dist.get_rank() if dist.is_initialized() else 0
        return _steps.StepPlan(self.dataset_len, self.batch_size * world, 1, rank,
                               self.shuffle, self.seed, drop_last=self.drop_last,
                               group_size=world)

    def __len__(self) -> int:
        return self._plan().steps_per_epoch

    def __iter__(self):
        tuner = self.balancing.tuner
        if tuner is None:
            raise RuntimeError("HetrunBalancing: the batch sampler is iterated before the "
                               "training starts (add the callback to the Trainer's callbacks)")
        plan, k = self._plan(), self.balancing.accumulate
        order = plan.order(self.epoch)
        # Lightning steps the optimizer every k batches and at the end of each epoch.
        steps_per_epoch = -(-plan.steps_per_epoch // k)
        for q in range(plan.steps_per_epoch):
            step = max(self.epoch * steps_per_epoch + q // k - self.balancing.first_step,
                       tuner.step_index)
            self.next_step = max(self.next_step, step + 1)
            yield plan.micro_batches(order, q, tuner.shares_at(step))[0]


class HetrunBalancing(pl.Callback):
    """Lightning callback: per-rank shares by measured speed, exact updates (module doc)."""

    def __init__(self, tune: bool = True, window: int = 10, **tuner_options) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"HetrunBalancing: window={window!r} must be an integer >= 1")
        self.tune = bool(tune)
        self.window = window
        self.tuner_options = tuner_options
        self.tuner: Optional[Tuner] = None
        self.accumulate = 1
        self.first_step = 0
        self._sampler: Optional[_MicroStepSampler] = None
        self._ctx = None
        self._micro = 0
        self._plan: Optional[_steps.StepPlan] = None
        self._weight = 0.0

    def batch_sampler(self, dataset_len: int, batch_size: int, shuffle: bool = True,
                      seed: int = 0, drop_last: bool = False) -> _MicroStepSampler:
        """The DataLoader's batch_sampler (module doc); one per callback. The samples after the
        last full micro-step are one more, smaller micro-step unless drop_last."""
        if isinstance(dataset_len, bool) or not isinstance(dataset_len, int) or dataset_len < 1:
            raise ValueError(f"HetrunBalancing.batch_sampler: dataset_len={dataset_len!r} must be "
                             f"an integer >= 1")
        self._sampler = _MicroStepSampler(self, dataset_len, batch_size, shuffle, seed, drop_last)
        return self._sampler

    # ---- Lightning hooks ----------------------------------------------------------------
    def setup(self, trainer, pl_module, stage) -> None:
        if stage != "fit":
            return
        if trainer._accelerator_connector.use_distributed_sampler and trainer.world_size > 1:
            raise ValueError("HetrunBalancing: pass use_distributed_sampler=False to "
                             "L.Trainer: Lightning would replace the callback's batch sampler "
                             "with a DistributedSampler")
        strategy = type(trainer.strategy).__name__
        if trainer.world_size > 1 and strategy != "DDPStrategy":
            raise ValueError(f"HetrunBalancing: strategy {strategy} is not balanced; use "
                             f"strategy='ddp'")
        if self._sampler is None:
            raise ValueError("HetrunBalancing: the training DataLoader does not use the "
                             "callback's batch_sampler(len(dataset), batch_size)")
        self.accumulate = int(trainer.accumulate_grad_batches)

    def on_train_start(self, trainer, pl_module) -> None:
        model = trainer.strategy.model
        group_size = dist.get_world_size()
        batch = self._sampler.batch_size * group_size
        self.tuner = Tuner(batch, window=self.window, reduction="sum", tune=self.tune,
                           **self.tuner_options)
        self.first_step = trainer.global_step  # a resumed fit starts the split over
        self._plan = self._sampler._plan()
        _ddp_hook.register(model, self.tuner, lambda: self._weight)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        # This micro-step's weight: this rank's share of its global batch (a smaller last one
        # included, split in the tuner's proportions).
        plan, tuner = self._plan, self.tuner
        split = tuner.shares_at(tuner.step_index)
        shares = plan.shares_for(batch_idx, split)
        self._weight = shares[tuner.group_rank] / plan.batch_at(batch_idx)
        if self._micro == 0:
            if plan.is_last_partial(batch_idx) and batch_idx % self.accumulate == 0:
                tuner._next_step_shares(shares)  # the step is that smaller micro-step alone
            self._ctx = self.tuner.step()
            self._ctx.__enter__()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self._micro += 1
        last = trainer.fit_loop.epoch_loop._accumulated_batches_reached() or \
            trainer.fit_loop.epoch_loop._num_ready_batches_reached()
        if last:
            self._close(None)

    def on_exception(self, trainer, pl_module, exception) -> None:
        if self._ctx is not None:
            self._close(sys.exc_info())

    def _close(self, exc_info) -> None:
        self._micro, ctx, self._ctx = 0, self._ctx, None
        if ctx is not None:
            ctx.__exit__(*(exc_info or (None, None, None)))
