"""What the tuner times under FSDP2: the compute between FSDP's hooks, never a wait in them.

The timeline test wraps FSDP2's private parameter-group methods and final backward callback
(torch 2.11) and checks that the clock is paused whenever one runs: the public module and tensor
hooks hetrun/engines/fsdp.py registers bracket them. The balance tests run 2 + 1 emulated ranks (the
third 3x slower through HETRUN_EMULATE_SLOWDOWN, which stretches compute intervals only)."""

import pathlib

WORKERS = pathlib.Path(__file__).resolve().parent / "fsdp_workers.py"
SLOW = {"HETRUN_EMULATE_SLOWDOWN": "ampere=3,hopper=1",
        "per_rank": {0: {"HETRUN_GPU_FAMILY": "hopper"}, 1: {"HETRUN_GPU_FAMILY": "hopper"},
                     2: {"HETRUN_GPU_FAMILY": "ampere"}}}


def test_clock_is_paused_inside_every_fsdp_hook(workers):
    results = workers("timeline", 2, script=WORKERS)
    for rank, r in enumerate(results):
        assert r["running_inside"] == [], f"rank {rank}: clock ran inside {r['running_inside']}"
        # 4 Linear units with parameters (the root has none of its own), 2 steps: every hook
        # of every unit ran, so every one was looked at
        for name in ("pre_forward", "post_forward", "pre_backward", "post_backward"):
            assert r["calls"].get(name, 0) == 8, f"rank {rank}: {name} {r['calls']}"
        assert r["calls"].get("final_callback", 0) == 2
        # at least one interval per unit and pass: 4 units x forward, backward
        assert all(n >= 8 for n in r["intervals"]), r["intervals"]


def test_uniform_shares_measure_the_slow_rank_slow(workers):
    # The bug FSDP2 had without hetrun/engines/fsdp.py: every rank's timed region held its waits, so
    # all ranks looked alike. Compute-only, the fast ranks measure well under the slow one.
    results = workers("balance", 3, SLOW, args=("uniform",), script=WORKERS)
    assert [r["slowdown"] for r in results] == [1.0, 1.0, 3.0]
    compute = results[0]["compute_ms"]
    assert results[0]["final"] == [16, 16, 16]
    assert max(compute[:2]) < 0.6 * compute[2], f"compute_ms {compute}"


def test_split_converges_toward_the_speed_ratio(workers):
    results = workers("balance", 3, SLOW, args=("tuned",), script=WORKERS)
    for r in results[1:]:
        assert r["shares"] == results[0]["shares"]
    final = results[0]["final"]
    assert sum(final) == 48
    assert final[2] <= 0.6 * min(final[:2]), f"final shares {final}"
    # Balanced: the slow rank's measured compute near the fast ranks' (3x under uniform shares;
    # a wide band, the machine is shared and noisy).
    compute = results[0]["compute_ms"]
    fast = (compute[0] + compute[1]) / 2
    assert 0.6 * fast <= compute[2] <= 1.6 * fast, f"last windows' compute_ms {compute}"
