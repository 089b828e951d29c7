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
    plans = [_steps.StepPlan(95, batch, k, rank, shuffle=True, seed=7, group_size=world)
             for rank in range(world)]
    assert plans[0].steps_per_epoch == 3 and plans[0].dropped_samples == 5  # 5 < 3 ranks x k
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


# Issue 39 item 11: 100 samples, global batch 16: the Trainer trains all 100 in 7 steps; the plan
# cut 6 steps (96 samples) and never trained the last 4, whatever drop_last said.
def test_the_last_smaller_global_batch_is_a_step_split_by_the_tuners_proportions():
    world, batch, k = 2, 16, 1
    plans = [_steps.StepPlan(100, batch, k, rank, shuffle=True, seed=3, group_size=world)
             for rank in range(world)]
    assert plans[0].steps_per_epoch == 7 and plans[0].last_batch == 4
    assert plans[0].batch_at(6) == 4 and plans[0].batch_at(5) == 16
    order = plans[0].order(epoch=0)
    tuned = [12, 4]  # the tuner's split of a full global batch (rank 0 three times as fast)
    seen = [i for step in range(7) for p in plans
            for micro in p.micro_batches(order, step, tuned) for i in micro]
    assert sorted(seen) == list(range(100)), "every sample once"
    assert plans[0].shares_for(6, tuned) == [3, 1]
    dropped = _steps.StepPlan(100, batch, k, 0, drop_last=True, group_size=world)
    assert dropped.steps_per_epoch == 6 and dropped.dropped_samples == 4


def test_scaled_shares_keep_the_proportions_the_minimum_and_the_total():
    assert _steps.scale_shares([12, 4], 4) == [3, 1]
    assert _steps.scale_shares([10, 10, 10], 7, 2) == [3, 2, 2]
    assert _steps.scale_shares([29, 1], 5, 2) == [3, 2]
    for total in range(6, 40):
        out = _steps.scale_shares([20, 7, 3], total, 2)
        assert sum(out) == total and min(out) >= 2
    with pytest.raises(ValueError):
        _steps.scale_shares([1, 1, 1], 5, 2)
