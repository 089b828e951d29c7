"""FSDP2 contract errors: each a ValueError naming what was given (docs/ARCHITECTURE.md §5.8)."""

import pathlib

import pytest
import torch
import torch.distributed as dist
from torch.distributed.fsdp import FullyShardedDataParallel, fully_shard

import hetrun
from conftest import free_port

WORKERS = pathlib.Path(__file__).resolve().parent / "fsdp_workers.py"


@pytest.fixture(scope="module")
def world_of_one():
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0,
                            world_size=1)
    yield
    dist.destroy_process_group()


def sharded(reshard=True):
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    fully_shard(net[0])
    fully_shard(net[2])
    return fully_shard(net)


def one_step(tuner, model):
    with tuner.step():
        tuner.loss(model(torch.randn(tuner.share, 4)).pow(2).sum(dim=1)).backward()


def test_fsdp1_is_named(world_of_one):
    model = FullyShardedDataParallel(torch.nn.Linear(4, 2), device_id=torch.device("cpu"))
    with pytest.raises(ValueError, match="FSDP1 FullyShardedDataParallel"):
        hetrun.Tuner(8, model=model)


def test_a_module_with_fsdp_layers_but_no_root(world_of_one):
    net = torch.nn.Sequential(torch.nn.Linear(4, 2))
    fully_shard(net[0])
    with pytest.raises(ValueError, match="got Sequential"):
        hetrun.Tuner(8, model=net)


def test_a_module_that_is_not_the_root_fails_at_the_first_step(world_of_one):
    model = sharded()
    tuner = hetrun.Tuner(8, model=model[0])  # a layer: FSDP picks the root at the first forward
    with pytest.raises(ValueError, match="Linear.*is not the FSDP root"):
        one_step(tuner, model)


def test_a_divide_factor_other_than_the_group_size_needs_another_reduction(world_of_one):
    model = sharded()
    model[0].set_gradient_divide_factor(3.0)  # the root holds no parameters of its own
    with pytest.raises(ValueError, match=r"divide factor 3\.0.*reduction='mean'"):
        hetrun.Tuner(8, model=model)
    with pytest.raises(ValueError, match=r"divide factor 3\.0.*reduction='sum'"):
        hetrun.Tuner(8, model=model, reduction="sum")


def test_divide_factors_on_two_ranks(workers):
    # FSDP2 summing (factor 1.0) with reduction="mean", and averaging (none set) with "sum".
    results = workers("divide_factors", 2, script=WORKERS)
    for r in results:
        assert "divide factor 1.0, which does not match reduction='mean'" in r["mean"]
        assert "divide factor none" in r["sum"] and "reduction='sum'" in r["sum"]


def test_divide_factor_set_after_the_tuner_is_checked_at_the_first_step(world_of_one):
    model = sharded()
    tuner = hetrun.Tuner(8, model=model)
    model[2].set_gradient_divide_factor(2.5)
    with pytest.raises(ValueError, match=r"Linear has gradient divide factor 2\.5"):
        one_step(tuner, model)


def test_fsdp_reports_its_engine_and_micro_batches_follow_the_memory_cap(world_of_one):
    model = sharded()
    tuner = hetrun.Tuner(16, model=model, bytes_per_sample=1000, memory_ceiling_bytes=4500)
    assert tuner.engine == "FSDP2" and tuner.max_micro_batch == 4
    assert tuner.micro_batches(100) == [4, 4, 4, 4]
    assert tuner.micro_batches(3) == [3, 3, 3, 3, 2, 2]
    with pytest.raises(ValueError, match="bytes_per_sample=0"):
        hetrun.Tuner(16, model=sharded(), bytes_per_sample=0, memory_ceiling_bytes=10)
    with pytest.raises(ValueError, match="memory_ceiling_bytes=10 needs bytes_per_sample"):
        hetrun.Tuner(16, model=sharded(), memory_ceiling_bytes=10)
    with pytest.raises(ValueError, match="not one sample fits"):
        hetrun.Tuner(16, model=sharded(), bytes_per_sample=100, memory_ceiling_bytes=10)


def test_measured_memory_needs_cuda_and_says_what_the_cap_comes_from(world_of_one):
    with pytest.raises(ValueError, match=r"bytes_per_sample='measure' .* needs a CUDA device"):
        hetrun.Tuner(16, model=sharded(), bytes_per_sample="measure", memory_ceiling_bytes=1 << 30)
    tuner = hetrun.Tuner(16, model=sharded(), bytes_per_sample=1000, memory_ceiling_bytes=4500)
    model = tuner.memory_model
    assert model["source"] == "declared" and model["per_sample"] == 1000
    assert model["base"] == 0 and model["ceiling"] == 4500 and model["fixed"] == 0
    assert hetrun.Tuner(16, model=sharded()).memory_model["source"] is None


def test_the_peak_line_is_fitted_from_two_sizes_and_read_conservatively_from_one():
    from hetrun._memory import fit_peak
    # Two sizes on a line: base and slope exactly (rounded up).
    assert fit_peak([(8, 1000 + 8 * 300), (4, 1000 + 4 * 300)]) == (1000, 300)
    assert fit_peak([(8, 1000 + 8 * 300), (4, 1000 + 4 * 300), (4, 1000 + 4 * 300 + 2)]) == (1002, 300)
    # One size: every byte counted per sample (never less room than the truth).
    assert fit_peak([(6, 1000), (6, 1200)]) == (0, 200)
    # A slope the points cannot support (the smaller size peaked higher): the same reading.
    assert fit_peak([(8, 1000), (4, 1100)]) == (0, 275)
    # A step without samples says nothing about the slope; no step with samples is an error.
    assert fit_peak([(0, 500), (5, 1000)]) == (0, 200)
    with pytest.raises(ValueError, match="no step with samples"):
        fit_peak([(0, 500)])


def test_mesh_and_group_that_disagree(workers):
    results = workers("mesh_group_mismatch", 2, script=WORKERS)
    for rank, r in enumerate(results):
        assert r["error"] is not None, f"rank {rank}"
        assert f"group= holds ranks [{rank}]" in r["error"] and "[0, 1]" in r["error"]


def test_tensor_parallel_mesh_is_out_of_scope(workers):
    results = workers("tensor_parallel", 2, script=WORKERS)
    for r in results:
        assert r["error"] is not None and "tensor-parallel" in r["error"], r["error"]
        assert "'tp': 2" in r["error"]
