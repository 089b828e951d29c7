"""Bad input raises ValueError / RuntimeError naming the value: never a crash or a hang."""

import os

import pytest
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

import hetrun
from conftest import free_port


@pytest.fixture(scope="module")
def world_of_one():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def test_tuner_without_process_group_is_a_runtime_error():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="init_process_group"):
        hetrun.Tuner(8)


def test_global_batch_below_group_times_min_share(world_of_one):
    with pytest.raises(ValueError, match=r"global_batch=2 .*min_share 3"):
        hetrun.Tuner(2, min_share=3)


@pytest.mark.parametrize("kwargs, named", [
    ({"global_batch": 0}, "global_batch=0"),
    ({"global_batch": 10**19}, r"global_batch=10000000000000000000 must be an integer <= 2\^40"),
    ({"global_batch": 8, "window": 2**63}, r"window=9223372036854775808 must be"),
    ({"global_batch": 8, "window": 0}, "window=0"),
    ({"global_batch": 8, "warmup": -1}, "warmup=-1"),
    ({"global_batch": 8, "reduction": "avg"}, "reduction='avg'"),
    ({"global_batch": 8, "shares": [5]}, r"shares=\[5\]"),
    ({"global_batch": 8, "dead_band": 2.0}, "dead_band"),
    ({"global_batch": 8, "no_such_option": 1}, "no_such_option"),
])
def test_bad_options_name_the_value(world_of_one, kwargs, named):
    with pytest.raises(ValueError, match=named):
        hetrun.Tuner(**kwargs)


def test_loss_slice_that_does_not_match_the_share(world_of_one):
    tuner = hetrun.Tuner(8, tune=False)
    assert (tuner.offset, tuner.share) == (0, 8)
    with pytest.raises(ValueError, match="share is 8"):
        with tuner.step():
            tuner.loss(torch.ones(5, requires_grad=True))
    with pytest.raises(ValueError, match="9 samples this step, but this rank's share is 8"):
        with tuner.step():
            tuner.loss(torch.ones(9))
    with pytest.raises(ValueError, match=r"shape \[n\]"):
        with tuner.step():
            tuner.loss(torch.ones(2, 4))


def test_nested_or_unexited_step(world_of_one):
    tuner = hetrun.Tuner(8)
    with pytest.raises(RuntimeError, match="still open"):
        with tuner.step():
            with tuner.step():
                pass
    tuner.step().__enter__()  # entered, never exited
    with pytest.raises(RuntimeError, match="step 0 is still open"):
        tuner.step().__enter__()


def test_loss_outside_step(world_of_one):
    tuner = hetrun.Tuner(8)
    with pytest.raises(RuntimeError, match="outside"):
        tuner.loss(torch.ones(8))


def test_model_with_a_comm_hook_already(world_of_one):
    model = DistributedDataParallel(torch.nn.Linear(2, 1))
    model.register_comm_hook(None, default_hooks.allreduce_hook)
    with pytest.raises(ValueError, match="allreduce_hook"):
        hetrun.Tuner(8, model=model)


def test_model_that_is_not_ddp(world_of_one):
    with pytest.raises(ValueError, match="Linear"):
        hetrun.Tuner(8, model=torch.nn.Linear(2, 1))


def test_sampler_dataset_smaller_than_the_batch(world_of_one):
    tuner = hetrun.Tuner(8)
    with pytest.raises(ValueError, match="dataset_len=5"):
        hetrun.ShareBatchSampler(5, tuner)


def test_micro_batches_split_the_share_evenly(world_of_one):
    tuner = hetrun.Tuner(10, tune=False)
    assert tuner.micro_batches(4) == [4, 3, 3]
    assert tuner.micro_batches(10) == [10]
    with pytest.raises(ValueError, match="max_micro_batch=0"):
        tuner.micro_batches(0)


def test_rank_outside_the_group_is_a_runtime_error(workers):
    results = workers("not_member", 2)
    assert results[0]["error"] is None
    assert "rank 1 is not a member of the group [0]" in results[1]["error"]
