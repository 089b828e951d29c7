"""hetrun.ShareBatchSampler: per step, this rank's indices of that step's global batch.

A DataLoader with workers draws batches from its sampler ahead of training (num_workers x
prefetch_factor of them), so the sampler produces step s's indices before the tuner has closed
the windows that precede s. The split therefore reaches a step through a schedule both sides read:
every split the tuner decides applies from the first step that no rank's sampler has produced yet
(each rank's `next_step` rides along in the window's one all-gather, and every rank takes the
maximum), and the sampler cuts step s with tuner.shares_at(s). A step is trained with exactly the
split its batch was loaded for, on every rank, so each global batch is covered once."""

from __future__ import annotations

from typing import Iterator, List

import torch


class ShareBatchSampler(torch.utils.data.Sampler):
    """Use as DataLoader(dataset, batch_sampler=ShareBatchSampler(len(dataset), tuner)).

    Each epoch is a permutation of the dataset (shuffle=True: seeded with seed + epoch, the same
    on every rank) cut into len(dataset) // global_batch global batches; a step's batch is this
    rank's slice [offset, offset + share) of its global batch. The epoch advances by one at each
    iteration unless set_epoch() is called.
    """

    def __init__(self, dataset_len: int, tuner, shuffle: bool = True, seed: int = 0) -> None:
        if isinstance(dataset_len, bool) or not isinstance(dataset_len, int):
            raise ValueError(f"ShareBatchSampler: dataset_len={dataset_len!r} is not an integer")
        if dataset_len < tuner.global_batch:
            raise ValueError(f"ShareBatchSampler: dataset_len={dataset_len} is below the global "
                             f"batch {tuner.global_batch}")
        self.dataset_len = dataset_len
        self.tuner = tuner
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.next_step = tuner.step_index  #: the first step this sampler has not produced yet
        tuner._attach_sampler(self)

    def set_epoch(self, epoch: int) -> None:
        """Use epoch `epoch`'s permutation from the next iteration on (as DistributedSampler)."""
        self.epoch = epoch

    def __len__(self) -> int:
        return self.dataset_len // self.tuner.global_batch

    def __iter__(self) -> Iterator[List[int]]:
        epoch, self.epoch = self.epoch, self.epoch + 1
        if self.shuffle:
            generator = torch.Generator()
            generator.manual_seed(self.seed + epoch)
            order = torch.randperm(self.dataset_len, generator=generator).tolist()
        else:
            order = list(range(self.dataset_len))
        batch, rank = self.tuner.global_batch, self.tuner.group_rank
        # A fresh iterator starts at the tuner's next step (an abandoned one's batches are gone).
        first = self.tuner.step_index
        for i in range(len(self)):
            step = first + i
            shares = self.tuner.shares_at(step)
            lo = i * batch + sum(shares[:rank])
            self.next_step = step + 1
            yield order[lo:lo + shares[rank]]
