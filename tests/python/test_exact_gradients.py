"""Exact gradients under real DDP over Gloo: 4 processes with shares 1/2/3/10 of 16 give the
gradient of one process on the whole batch (docs/ARCHITECTURE.md §5.3), with and without
micro-batch accumulation under no_sync(), and with reduction="sum" and the user's own SUM
all-reduce."""

import pytest


@pytest.mark.parametrize("mode", ["plain", "micro", "sum"])
def test_unequal_shares_give_the_whole_batch_gradient(workers, mode):
    results = workers("exact_gradients", 4, args=(mode,))
    for rank, r in enumerate(results):
        assert r["shares"] == [1, 2, 3, 10], f"rank {rank}"
        assert r["diff"] <= 1e-6, f"rank {rank}: max abs gradient difference {r['diff']}"
    assert [r["offset"] for r in results] == [0, 1, 3, 6]
    if mode == "micro":
        assert results[3]["micro_batches"] == [3, 3, 2, 2]
