"""hetrun.integrations.transformers.HetrunTrainer: transformers.Trainer with hetrun's balancing.

    from hetrun.integrations.transformers import HetrunTrainer
    trainer = HetrunTrainer(model=model, args=args, train_dataset=ds, data_collator=collate)
    trainer.train()                       # as Trainer; trainer.tuner: the hetrun.Tuner

Same arguments as Trainer, plus tune (default True; False keeps the even split, a baseline that
still measures) and window (optimizer steps per tuner window, default 10). One tuner step is one
optimizer step with all its accumulation micro-steps. Global batch B = per_device_train_batch_size
x world size x gradient_accumulation_steps, one permutation of the dataset per epoch (the same on
every rank: seed + epoch), split by the tuner from each rank's measured compute and cut into the
accumulation micro-batches (hetrun.integrations._steps). Every sample is trained, as by the
Trainer: the samples after the last full global batch are one more, smaller step, split in the
tuner's proportions (dataloader_drop_last=True drops them, as the Trainer does; so are fewer than
one per rank and micro-batch). The update equals the even split's:

- a token-mean loss (a model that takes loss kwargs, or compute_loss_func, with labels and
  average_tokens_across_devices=True, the Trainer's default) is already normalised by the global
  token count, whatever the split;
- any other loss is a mean over its micro-batch and is scaled by m x W / B (the Trainer then does
  not divide it by the accumulation steps), so DDP's mean all-reduce gives the global mean.

Resuming from a checkpoint continues the data order at the resumed step and starts the split over
(even, then re-tuned: a few windows). Needs a map-style dataset (an IterableDataset has no global
batch to split: ValueError) and DDP or DeepSpeed (world size 1: the Trainer, untouched). FSDP
through the Trainer is not balanced yet (ValueError).

DeepSpeed (TrainingArguments(deepspeed=config)): the Trainer's DeepSpeedEngine is the tuner's
model (hetrun/engines/deepspeed.py times compute only, the waits in ZeRO's collectives excluded);
the Trainer already calls engine.backward(..., scale_wrt_gas=False) and DeepSpeed averages over
the ranks as DDP does, so the same loss factor keeps ZeRO 0-3 exact. Each rank runs the
Trainer's k accumulation micro-batches per step (ZeRO-2/3 reduce on every backward: the count is
the same everywhere), so DeepSpeed's own boundary (its micro-step counter with the config's "auto"
accumulation steps) and its sample counter (train_batch_size = B) stay right.
"""

from __future__ import annotations

import sys
from typing import Optional

import torch
import torch.distributed as dist
import transformers
from transformers.trainer_pt_utils import BatchRebalanceSampler

from hetrun._tuner import Tuner
from hetrun.engines.deepspeed import is_deepspeed_engine
from hetrun.integrations import _steps


class _TunedBatchSampler(BatchRebalanceSampler):
    """This rank's micro-batches, step by step (a BatchRebalanceSampler so that the Trainer hands
    it to the DataLoader as its batch_sampler and keeps accelerate from re-sharding it)."""

    def __init__(self, trainer: "HetrunTrainer", dataset_len: int) -> None:  # noqa: D107
        # BatchRebalanceSampler's own state (lengths, cost model) is not used.
        self.trainer = trainer
        args = trainer.args
        self.group_size = max(1, args.world_size)
        self.plan = _steps.StepPlan(dataset_len, trainer.global_batch,
                                    args.gradient_accumulation_steps, args.process_index,
                                    shuffle=True, seed=args.data_seed if args.data_seed is not None
                                    else args.seed, drop_last=args.dataloader_drop_last,
                                    group_size=self.group_size)
        trainer._plan = self.plan
        self.epoch = 0
        self.next_step = 0  #: the first tuner step this sampler has not produced yet

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __len__(self) -> int:
        return self.plan.steps_per_epoch * self.plan.micro_steps

    def __iter__(self):
        tuner = self.trainer._ensure_tuner()
        if self.trainer._first_step is None:  # the step training (re)starts from
            self.trainer._first_step = self.trainer.state.global_step
        self.next_step = max(self.next_step, tuner.step_index)
        return _steps.epoch_micro_batches(self.plan, tuner, self.epoch, self.trainer._first_step,
                                          self)


class HetrunTrainer(transformers.Trainer):
    """transformers.Trainer whose ranks take unequal shares of each global batch (module doc)."""

    def __init__(self, *args, tune: bool = True, window: int = 10, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"HetrunTrainer: window={window!r} must be an integer >= 1")
        self.tune = bool(tune)
        self.window = window
        self.tuner: Optional[Tuner] = None
        self._first_step: Optional[int] = None
        self._micro = 0
        self._step_ctx = None
        self._plan: Optional[_steps.StepPlan] = None  # the sampler's, once it is made
        a = self.args
        self.global_batch = a.per_device_train_batch_size * max(1, a.world_size) * \
            a.gradient_accumulation_steps
        self._balanced = a.world_size > 1
        if self._balanced:
            self._check_supported()

    # ---- what the Trainer calls ---------------------------------------------------------
    def get_train_dataloader(self):
        dataset = self.train_dataset
        if self._balanced and (isinstance(dataset, torch.utils.data.IterableDataset)
                               or not hasattr(dataset, "__len__")):
            raise ValueError(f"HetrunTrainer: train_dataset is an IterableDataset "
                             f"({type(dataset).__name__}): the balancing splits a global batch of "
                             f"a map-style dataset")
        return super().get_train_dataloader()

    def _get_train_sampler(self, train_dataset=None):
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        if not self._balanced:
            return super()._get_train_sampler(train_dataset)
        return _TunedBatchSampler(self, len(dataset))

    def training_step(self, model, inputs, num_items_in_batch=None):
        if not self._balanced:
            return super().training_step(model, inputs, num_items_in_batch)
        timing = getattr(self._ensure_tuner(), "_engine", None)
        between = getattr(timing, "leave", None)  # DeepSpeed: the loader's time is no compute
        if self._micro == 0:
            self._use_last_batch_split()
            self._step_ctx = self.tuner.step()
            self._step_ctx.__enter__()
        elif between is not None:
            timing.enter()
        try:
            loss = super().training_step(model, inputs, num_items_in_batch)
        except BaseException:
            self._micro, ctx, self._step_ctx = 0, self._step_ctx, None
            ctx.__exit__(*sys.exc_info())
            raise
        self._micro += 1
        if self._micro >= self.current_gradient_accumulation_steps:
            self._micro, ctx, self._step_ctx = 0, self._step_ctx, None
            ctx.__exit__(None, None, None)
        elif between is not None:
            between()
        return loss

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if not self._balanced or self._token_mean(inputs, num_items_in_batch):
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        samples = _steps.batch_size_of(inputs)
        result = super().compute_loss(model, inputs, return_outputs, None)
        factor = _steps.loss_factor(samples, self.tuner.group_size, self.tuner.step_batch)
        self.loss_is_scaled_for_ga = True  # the factor covers the accumulation steps
        if return_outputs:
            return result[0] * factor, result[1]
        return result * factor

    # ---- internals ----------------------------------------------------------------------
    def _use_last_batch_split(self) -> None:
        """The epoch's last, smaller global batch (not dataloader_drop_last): the tuner runs that
        step at the sampler's scaled split. Optimizer step s is step s % steps_per_epoch of its
        epoch, as the sampler numbers them."""
        plan = self._plan
        if plan is None:
            return
        q = self.state.global_step % plan.steps_per_epoch
        if plan.is_last_partial(q):
            tuner = self.tuner
            tuner._next_step_shares(plan.shares_for(q, tuner.shares_at(tuner.step_index)))

    def _token_mean(self, inputs, num_items_in_batch) -> bool:
        return (num_items_in_batch is not None and self.args.average_tokens_across_devices
                and (self.model_accepts_loss_kwargs or self.compute_loss_func is not None))

    def _check_supported(self) -> None:
        a = self.args
        if getattr(self, "is_fsdp_enabled", False) or getattr(a, "fsdp", None):
            raise ValueError("HetrunTrainer: FSDP through the Trainer is not balanced yet; use "
                             "transformers.Trainer, or hetrun.Tuner with fully_shard")
        if not a.average_tokens_across_devices and self.model_accepts_loss_kwargs:
            raise ValueError("HetrunTrainer: average_tokens_across_devices=False with a model "
                             "that normalises its loss by num_items_in_batch: each rank would "
                             "divide by its own token count, which is not exact under unequal "
                             "shares; keep the default (True)")
        _steps.check_shares_fit(self.global_batch, a.world_size, a.gradient_accumulation_steps,
                                "per_device_train_batch_size x world size x accumulation steps")

    def _ensure_tuner(self) -> Tuner:
        if self.tuner is None:
            model = self.model_wrapped
            if not (isinstance(model, torch.nn.parallel.DistributedDataParallel)
                    or is_deepspeed_engine(model)):
                raise ValueError(f"HetrunTrainer: the Trainer's model is a {type(model).__name__}"
                                 f", not DistributedDataParallel or a DeepSpeed engine: the "
                                 f"balancing needs one of them")
            if not dist.is_initialized():
                raise RuntimeError("HetrunTrainer: torch.distributed is not initialised")
            self.tuner = Tuner(self.global_batch, window=self.window, model=model,
                               min_share=self.args.gradient_accumulation_steps, tune=self.tune)
        return self.tuner
