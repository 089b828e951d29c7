"""ShareBatchSampler under DataLoader(num_workers=2): the loader draws batches ahead of training,
across window changes and epochs, and still every global batch is covered exactly once per step,
each rank trains on exactly the split its batch was loaded for, and every rank sees the same
shares."""

import torch


def expected_order(epoch, n=200, seed=7):
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()


def test_every_global_batch_is_covered_once_across_window_changes(workers):
    world, batch, steps = 2, 16, 31
    per_rank = {1: {"HETRUN_GPU_FAMILY": "ampere"}, 0: {"HETRUN_GPU_FAMILY": "hopper"}}
    results = workers("sampler", world, {"HETRUN_EMULATE_SLOWDOWN": "ampere=4,hopper=1",
                                         "per_rank": per_rank}, args=(str(steps),))
    steps_per_epoch = results[0]["len"]
    assert steps_per_epoch == 200 // batch
    for step in range(steps):
        rows = [r["steps"][step] for r in results]
        assert all(row["step"] == step for row in rows)
        assert rows[0]["shares"] == rows[1]["shares"], f"step {step}: ranks disagree"
        indices = [i for row in rows for i in row["indices"]]
        epoch, k = divmod(step, steps_per_epoch)
        want = expected_order(epoch)[k * batch:(k + 1) * batch]
        assert sorted(indices) == sorted(want), f"step {step}: global batch not covered once"
        assert [len(row["indices"]) for row in rows] == rows[0]["shares"]
    reports = results[0]["reports"]
    assert reports == results[1]["reports"]
    changes = [r for r in reports if r["shares_next"] != r["shares"]]
    assert changes, f"no window changed the split: {reports}"
    # The loader had already produced batches past the boundary: the new split waits for them.
    assert any(r["applies_from"] > r["closed_after"] for r in changes), changes
    # A decision can also take back a split that is scheduled but not yet applied: its report
    # reads shares == shares_next (both the split in effect) and still starts a split, so every
    # decision's first step counts (seen: a change at step 20 from such a report).
    starts = {r["applies_from"] for r in reports}
    for change in changes:
        first = change["applies_from"]
        if first < steps:
            assert results[0]["steps"][first]["shares"] == change["shares_next"]
    # The split moves only at the first step of a decision, never earlier (batches in flight).
    rows = results[0]["steps"]
    for step in range(1, steps):
        if rows[step]["shares"] != rows[step - 1]["shares"]:
            assert step in starts, f"step {step}: split changed outside {sorted(starts)}"
