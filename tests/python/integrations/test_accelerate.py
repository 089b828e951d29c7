"""BalancedSteps (hetrun.integrations.accelerate) in Accelerate's example loop (3 processes under
hetrun run, 2 H100 + 1 A100 emulated at 6x); once under torchrun."""

from launch import assert_balanced_and_exact, hetrun_mixed, torchrun_even


def test_the_loop_moves_samples_off_the_slow_rank_with_the_even_splits_update(tmp_path):
    summary = hetrun_mixed("accelerate_worker.py", ["--steps", "16", "--accumulate", "2"], tmp_path)
    assert_balanced_and_exact(summary, 8 * 3)


def test_runs_under_torchrun_and_names_bad_settings(tmp_path):
    summary = torchrun_even("accelerate_worker.py", ["--steps", "4"], tmp_path)
    assert "even_batches" in summary["errors"]["even_batches"], summary
    assert "IterableDataset" in summary["errors"]["iterable"], summary
