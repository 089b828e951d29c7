"""HETRUN_EMULATE_SLOWDOWN's per-sample factors ("ampere=3.17/sample") on the CPU clocks
(hetrun/job/compute_stretch.h, docs/ARCHITECTURE.md §5.4): a synthetic workload of a fixed cost
plus a cost per sample, timed by the clocks the engines use. Tolerances are wide: the machine may
be loaded, and a sleep can wake up late (by tens of ms under a parallel build): a late wake-up only
adds, so each check allows LATE above the expected time and a few ms below it. What is asserted
is the shape, c + k (t - c), never a speed."""

import time

import pytest

from hetrun import _core
from hetrun._timing import CpuIntervalClock, CpuStepClock

FIXED_S, PER_SAMPLE_S, K = 0.050, 0.002, 3.0
LATE, EARLY = 0.040, 0.004


def assert_near(stretched, expected, what):
    assert expected - EARLY <= stretched <= expected + LATE, (what, stretched, expected)


def run_steps(clock, counts, intervals=1):
    """[(samples, real seconds the test saw, stretched seconds the clock reported)]."""
    out = []
    for n in counts:
        clock.start(n)
        real = 0.0
        for _ in range(intervals):
            if intervals > 1:
                clock.resume()
            began = time.perf_counter()
            time.sleep((FIXED_S + PER_SAMPLE_S * n) / intervals)
            real += time.perf_counter() - began
            if intervals > 1:
                clock.pause()
            else:
                clock.mark_compute_end()
        measured = clock.finish()
        if intervals > 1:
            measured = measured[0]
        out.append((n, real, measured[0][1] / 1000.0))
    return out


def assert_follows_fixed_plus_k_times_rest(clock, steps):
    fixed, per_sample = clock.stretch.fixed_seconds, clock.stretch.per_sample_seconds
    assert fixed is not None and per_sample is not None
    assert FIXED_S * 0.3 < fixed < FIXED_S * 3, fixed  # a sanity range: real times can be late
    for n, real, stretched in steps:
        # t + (k - 1) b n: c + k (t - c) on the fitted line, the host's lateness added once
        assert_near(stretched, real + (K - 1) * per_sample * n, (n, real))
        # well short of the whole region stretched, k t, which is (k - 1) c = 100 ms more
        assert stretched < K * real - (K - 1) * FIXED_S / 2, (n, real, stretched)


def test_parses_the_per_sample_suffix_for_python():
    s = _core.parse_emulated_slowdown_schedule("ampere=3.17/sample,hopper=1", "ampere", 4)
    assert s.per_sample_at(0) == pytest.approx(3.17)
    assert s.whole_at(0) == 1.0
    with pytest.raises(ValueError, match="/samples"):
        _core.parse_emulated_slowdown_schedule("ampere=3/samples", "ampere", 4)


def test_step_clock_stretches_whole_region_until_two_counts_were_seen():
    clock = CpuStepClock(1.0, K)
    (n, real, stretched), = run_steps(clock, [16])
    assert clock.stretch.fixed_seconds is None
    assert_near(stretched, K * real, (n, real))


def test_step_clock_stretches_only_the_per_sample_part_once_fitted():
    clock = CpuStepClock(1.0, K)
    run_steps(clock, [16, 4, 16, 4, 16, 4])  # the fit needs two distinct counts
    assert_follows_fixed_plus_k_times_rest(clock, run_steps(clock, [4, 16, 8, 4, 16]))


def test_interval_clock_stretches_the_steps_sum_of_intervals_the_same_way():
    clock = CpuIntervalClock(1.0, K)
    run_steps(clock, [16, 4, 16, 4, 16, 4], intervals=3)
    assert_follows_fixed_plus_k_times_rest(clock, run_steps(clock, [4, 16, 8], intervals=3))


def test_whole_region_factor_keeps_stretching_everything():
    clock = CpuStepClock(K, 1.0)
    for n, real, stretched in run_steps(clock, [16, 4, 16, 4, 8]):
        assert_near(stretched, K * real, (n, real))
