"""FSDP2 under hetrun.Tuner: unequal shares give the parameters of one process training on the
whole global batches (float64, 1e-6; docs/ARCHITECTURE.md §5.3, §5.8). 4 CPU processes over
Gloo: per-layer fully_shard plus the root, or HSDP on a 2 x 2 mesh; reshard_after_forward both
ways; gradient accumulation with the job-wide micro-batch count (some micro-batches empty) and
set_requires_gradient_sync(False) on all but the last; reduction="sum" with FSDP2 summing
(set_gradient_divide_factor(1.0), torchtitan's setting)."""

import pathlib

import pytest

WORKERS = pathlib.Path(__file__).resolve().parent / "fsdp_workers.py"


@pytest.mark.parametrize("layout, reshard, accumulate, reduction", [
    ("fsdp", "reshard", "none", "mean"),
    ("fsdp", "keep", "max", "mean"),
    ("fsdp", "reshard", "memory", "sum"),
    ("hsdp", "reshard", "max", "mean"),
    ("hsdp", "keep", "none", "sum"),
])
def test_unequal_shares_match_one_process(workers, layout, reshard, accumulate, reduction):
    results = workers("exact", 4, args=(layout, reshard, accumulate, reduction), script=WORKERS)
    for rank, r in enumerate(results):
        assert r["engine"] == "FSDP2"
        assert r["group_size"] == 4, f"rank {rank}: the tuner's group is the whole mesh"
        assert r["shares"] == [1, 2, 3, 10]
        assert r["diff"] <= 1e-6, f"rank {rank}: max abs parameter difference {r['diff']}"
    if accumulate != "none":
        # The job-wide count: the rank with 10 samples needs 4 micro-batches of <= 3.
        expected = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [3, 3, 2, 2]]
        assert [r["sizes"][0] for r in results] == expected
        for r in results:
            assert r["micro_batch_count"] == [4, 4, 4, 4]
            assert r["micro_batch_size"] == [1, 1, 1, 3]
    else:
        assert results[0]["micro_batch_count"] == [1, 1, 1, 1]
        assert results[0]["micro_batch_size"] == [1, 2, 3, 10]
