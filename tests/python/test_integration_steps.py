"""hetrun.integrations._steps, the split the stock-trainer integrations share: whatever the
shares, the ranks' micro-batches of a step cover exactly that step's global batch, and the loss
factor turns micro-batch means into the global mean (no torch.distributed needed)."""

import random

import pytest
import torch

from hetrun.integrations import _steps


def test_micro_sizes_add_up_and_differ_by_at_most_one():
    for share in range(0, 40):
        for k in range(1, 6):
            sizes = _steps.micro_sizes(share, k)
            assert len(sizes) == k and sum(sizes) == share
            assert max(sizes) - min(sizes) <= 1


def test_every_split_covers_each_global_batch_exactly_once():
    rng = random.Random(3)
    world, batch, k = 3, 30, 2
    plans = [_steps.StepPlan(95, batch, k, rank, shuffle=True, seed=7) for rank in range(world)]
    order = plans[0].order(epoch=1)
    assert order == plans[2].order(epoch=1)  # every rank draws the same permutation
    for step in range(plans[0].steps_per_epoch):
        cuts = sorted(rng.sample(range(1, batch), world - 1))
        shares = [b - a for a, b in zip([0] + cuts, cuts + [batch])]
        seen = [i for p in plans for micro in p.micro_batches(order, step, shares) for i in micro]
        assert sorted(seen) == sorted(order[step * batch:(step + 1) * batch])


def test_the_loss_factor_turns_micro_batch_means_into_the_global_mean():
    losses = torch.arange(12, dtype=torch.float64)  # 12 samples over 3 ranks, shares 7, 3, 2
    shares, world, batch = [7, 3, 2], 3, 12
    total, lo = 0.0, 0
    for share in shares:
        mine = losses[lo:lo + share]
        lo += share
        at = 0
        for size in _steps.micro_sizes(share, 2):
            micro = mine[at:at + size]
            at += size
            total += micro.mean().item() * _steps.loss_factor(size, world, batch)
    assert total / world == pytest.approx(losses.mean().item())  # DDP's mean all-reduce


def test_batch_size_of_reads_the_first_tensor_and_refuses_tensorless_batches():
    assert _steps.batch_size_of({"input_ids": torch.zeros(5, 3), "labels": torch.zeros(5, 3)}) == 5
    assert _steps.batch_size_of([torch.zeros(4, 2), torch.zeros(4)]) == 4
    with pytest.raises(ValueError, match="without a tensor"):
        _steps.batch_size_of({"text": "abc"})


def test_a_dataset_smaller_than_one_global_batch_is_refused():
    with pytest.raises(ValueError, match="fewer than one global batch of 48"):
        _steps.StepPlan(40, 48, 2, 0)
