"""The weighted DDP communication hook of the integrations whose loss a callback cannot rescale
(Lightning, Accelerate): each rank's bucket is multiplied by weight() (its share of the step's
global batch, n_r / B, for a loss that is a mean over the rank's own samples) and all-reduced with
SUM, so the sum is the gradient of the global batch's mean loss whatever the split. The last
bucket also ends the rank's timed compute (hetrun.Tuner.mark_compute_end), so the tuner measures
compute only, never the wait for slower ranks in the all-reduce."""

from __future__ import annotations

from typing import Callable

import torch
import torch.distributed as dist


def register(model, tuner, weight: Callable[[], float]) -> None:
    """Registers the hook on `model` (a DistributedDataParallel module) for `tuner`."""
    if not isinstance(model, torch.nn.parallel.DistributedDataParallel):
        raise ValueError(f"hetrun: the balancing needs a DistributedDataParallel model, got "
                         f"{type(model).__name__} (strategy='ddp')")
    existing = model._get_ddp_logging_data().get("comm_hook", "")
    if existing:
        raise ValueError(f"hetrun: the model already has a DDP communication hook ({existing}); "
                         f"the balancing registers its own")

    def hook(group, bucket):
        if bucket.is_last():
            tuner.mark_compute_end()
        tensor = bucket.buffer()
        tensor.mul_(weight())
        work = dist.all_reduce(tensor, group=group, async_op=True)
        return work.get_future().then(lambda fut: fut.value()[0])

    model.register_comm_hook(model.process_group, hook)
