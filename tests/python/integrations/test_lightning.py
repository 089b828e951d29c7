"""HetrunBalancing (hetrun.integrations.lightning) with the real Lightning Trainer (DDP over Gloo,
3 processes under hetrun run, 2 H100 + 1 A100 emulated at 6x); once under torchrun."""

from launch import assert_balanced_and_exact, hetrun_mixed, torchrun_even


def test_the_callback_moves_samples_off_the_slow_rank_with_the_even_splits_update(tmp_path):
    summary = hetrun_mixed("lightning_worker.py", ["--steps", "16"], tmp_path)
    assert_balanced_and_exact(summary, 8 * 3)
    assert summary["environment"] == "TorchElasticEnvironment", summary


def test_accumulated_batches_stay_exact(tmp_path):
    summary = hetrun_mixed("lightning_worker.py", ["--steps", "14", "--accumulate", "2"], tmp_path)
    assert_balanced_and_exact(summary, 8 * 3)


def test_runs_under_torchrun_and_refuses_lightnings_distributed_sampler(tmp_path):
    summary = torchrun_even("lightning_worker.py", ["--steps", "4"], tmp_path)
    assert "use_distributed_sampler=False" in summary["errors"]["distributed_sampler"], summary
