"""The tuner under real DDP with emulated GPU families (HETRUN_EMULATE_SLOWDOWN per family): the
two ranks whose compute is stretched 3x end with clearly smaller shares than the two others,
every rank holds the same shares at every step, and the split moved only between steps."""


def test_slow_family_gets_fewer_samples(workers):
    per_rank = {r: {"HETRUN_GPU_FAMILY": "ampere" if r >= 2 else "hopper"} for r in range(4)}
    results = workers("convergence", 4, {"HETRUN_EMULATE_SLOWDOWN": "ampere=3,hopper=1",
                                         "per_rank": per_rank})
    assert [r["slowdown"] for r in results] == [1.0, 1.0, 3.0, 3.0]
    for r in results[1:]:
        assert r["shares"] == results[0]["shares"]
    final = results[0]["final"]
    assert sum(final) == 48
    assert max(final[2:]) <= 0.7 * min(final[:2]), f"final shares {final}"
    assert results[0]["efficiency"] is not None and results[0]["efficiency"] > 0
