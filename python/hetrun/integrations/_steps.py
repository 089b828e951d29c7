"""What the integrations share: the split of one optimizer step into per-rank micro-batches, and
the loss factor that keeps the update exact under unequal shares.

An optimizer step has a global batch of B samples (the library's per-device batch x world size x
accumulation steps k) taken from one permutation of the dataset that every rank draws alike
(seed + epoch). The tuner gives rank r a share n_r of it (shares add up to B); the rank trains on
its share as k micro-batches whose sizes differ by at most one (so min_share is k: no micro-batch
is empty). A library loss is a mean over its micro-batch; scaled by m * W / B (m the micro-batch's
samples, W the group size) and summed over the k micro-batches it is (W / B) x the sum of the
rank's per-sample losses, and DDP's mean all-reduce (the tuner's hook divides by W) then yields
exactly the mean gradient of the global batch: the same update as the even split.
"""

from __future__ import annotations

from typing import Iterator, List, Optional

import torch


def micro_sizes(share: int, micro_steps: int) -> List[int]:
    """`share` samples as `micro_steps` sizes that differ by at most one, largest first."""
    return [share // micro_steps + (1 if i < share % micro_steps else 0) for i in range(micro_steps)]


def loss_factor(micro_samples: int, group_size: int, global_batch: int) -> float:
    """The factor of a micro-batch's mean loss that makes DDP's mean all-reduce exact (above)."""
    return micro_samples * group_size / global_batch


def batch_size_of(inputs) -> int:
    """Samples in a collated batch: the first dimension of its first tensor."""
    if isinstance(inputs, torch.Tensor):
        return int(inputs.shape[0])
    if isinstance(inputs, dict):
        values = list(inputs.values())
    elif isinstance(inputs, (list, tuple)):
        values = list(inputs)
    else:
        raise ValueError(f"hetrun: cannot count the samples of a batch of type {type(inputs).__name__}")
    for value in values:
        if isinstance(value, torch.Tensor) and value.dim() > 0:
            return int(value.shape[0])
        if isinstance(value, (dict, list, tuple)):
            return batch_size_of(value)
    raise ValueError("hetrun: a batch without a tensor: cannot count its samples")


def scale_shares(shares: List[int], total: int, min_share: int = 1) -> List[int]:
    """`total` samples split in the proportions of `shares` (the tuner's split of a full global
    batch), each at least `min_share`, largest remainders first, ties to the lower rank: the
    split of an epoch's last, smaller global batch. The same list on every rank."""
    count = len(shares)
    if total < count * min_share:
        raise ValueError(f"hetrun: {total} samples cannot give each of {count} ranks "
                         f"{min_share}")
    whole = sum(shares)
    spare = total - count * min_share
    exact = [spare * s / whole for s in shares]
    out = [min_share + int(x) for x in exact]
    order = sorted(range(count), key=lambda r: (-(exact[r] - int(exact[r])), r))
    for r in order[: total - sum(out)]:
        out[r] += 1
    return out


class StepPlan:
    """The micro-batches of rank `rank` for every optimizer step of an epoch.

    dataset_len: samples in the dataset; global_batch: B; micro_steps: k; shares_at(t): the split
    in force at tuner step t. Step q of epoch e is global batch q of the epoch's permutation;
    `first_step` maps it to tuner step (e * steps_per_epoch + q) - first_step. The samples after
    the last full global batch (dataset_len % B of them) are one more, smaller step (the tuner's
    split scaled to it, scale_shares) unless drop_last, or when there are fewer than one per
    rank and micro-batch (group_size x k): then they are dropped (dropped_samples).
    """

    def __init__(self, dataset_len: int, global_batch: int, micro_steps: int, rank: int,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False,
                 group_size: int = 1) -> None:
        if dataset_len < global_batch:
            raise ValueError(f"hetrun: the dataset has {dataset_len} samples, fewer than one "
                             f"global batch of {global_batch}")
        self.dataset_len = dataset_len
        self.global_batch = global_batch
        self.micro_steps = micro_steps
        self.rank = rank
        self.shuffle = shuffle
        self.seed = seed
        self.full_steps = dataset_len // global_batch
        rest = dataset_len % global_batch
        self.min_share = micro_steps
        fits = rest >= max(1, group_size) * micro_steps
        #: samples of the last, smaller global batch (0: none)
        self.last_batch = rest if rest and not drop_last and fits else 0
        #: samples no step trains (drop_last, or too few to split)
        self.dropped_samples = rest - self.last_batch

    @property
    def steps_per_epoch(self) -> int:
        return self.full_steps + (1 if self.last_batch else 0)

    def is_last_partial(self, step_in_epoch: int) -> bool:
        """Whether step `step_in_epoch` is the epoch's last, smaller global batch."""
        return self.last_batch > 0 and step_in_epoch == self.full_steps

    def batch_at(self, step_in_epoch: int) -> int:
        """The global batch of step `step_in_epoch`: B, or the last one's samples."""
        return self.last_batch if self.is_last_partial(step_in_epoch) else self.global_batch

    def shares_for(self, step_in_epoch: int, shares: List[int]) -> List[int]:
        """The split of step `step_in_epoch` given the tuner's split of a full global batch."""
        if not self.is_last_partial(step_in_epoch):
            return list(shares)
        return scale_shares(shares, self.last_batch, self.min_share)

    def order(self, epoch: int) -> List[int]:
        if not self.shuffle:
            return list(range(self.dataset_len))
        generator = torch.Generator()
        generator.manual_seed(self.seed + epoch)
        return torch.randperm(self.dataset_len, generator=generator).tolist()

    def micro_batches(self, order: List[int], step_in_epoch: int, shares: List[int]) -> List[List[int]]:
        """This rank's k micro-batches of one step, cut from its slice of the global batch
        (`shares`: the tuner's split of a full one; scaled here for the last, smaller one)."""
        shares = self.shares_for(step_in_epoch, shares)
        lo = step_in_epoch * self.global_batch + sum(shares[: self.rank])
        mine = order[lo:lo + shares[self.rank]]
        out, at = [], 0
        for size in micro_sizes(len(mine), self.micro_steps):
            out.append(mine[at:at + size])
            at += size
        return out


def epoch_micro_batches(plan: StepPlan, tuner, epoch: int, first_step: int,
                        sampler) -> Iterator[List[int]]:
    """Yields the rank's micro-batches of every step of `epoch`. A step's split is the tuner's
    shares_at(its tuner step) (steps before first_step, which a resumed Trainer skips, take the
    current split); `sampler.next_step` follows what was produced, since the tuner applies a new
    split from the first step that no rank's sampler has produced yet."""
    order = plan.order(epoch)
    for q in range(plan.steps_per_epoch):
        step = max(epoch * plan.steps_per_epoch + q - first_step, tuner.step_index)
        sampler.next_step = max(sampler.next_step, step + 1)
        yield from plan.micro_batches(order, q, tuner.shares_at(step))


def check_shares_fit(global_batch: int, group_size: int, micro_steps: int,
                     what: Optional[str] = None) -> None:
    if global_batch < group_size * micro_steps:
        raise ValueError(f"hetrun: a global batch of {global_batch} cannot give each of "
                         f"{group_size} ranks {micro_steps} non-empty micro-batches"
                         + (f" ({what})" if what else ""))
