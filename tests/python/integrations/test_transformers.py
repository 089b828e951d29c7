"""HetrunTrainer (hetrun.integrations.transformers) with the real Trainer: tiny models built from
configs, Gloo, 3 processes under hetrun run (2 H100 + 1 A100 emulated at 6x), tuned and untuned in
one launch; once untuned under torchrun."""

from launch import assert_balanced_and_exact, hetrun_mixed, torchrun_even


def test_a_token_mean_model_moves_samples_off_the_slow_rank_with_the_even_splits_update(tmp_path):
    # GPT-2 (takes loss kwargs): the Trainer normalises by the global token count.
    summary = hetrun_mixed("hf_worker.py", ["--kind", "token", "--steps", "16"], tmp_path)
    assert_balanced_and_exact(summary, 8 * 3 * 2)


def test_a_sample_mean_loss_with_uneven_micro_batches_stays_exact(tmp_path):
    # 7 x 3 ranks x 3 accumulation steps = 63: shares cut into micro-batches of unequal sizes.
    args = ["--kind", "sample", "--steps", "16", "--batch", "7", "--accumulate", "3"]
    summary = hetrun_mixed("hf_worker.py", args, tmp_path)
    assert_balanced_and_exact(summary, 7 * 3 * 3)


def test_runs_under_torchrun_and_names_bad_input(tmp_path):
    summary = torchrun_even("hf_worker.py", ["--kind", "token", "--steps", "4"], tmp_path)
    assert summary["even_shares"] == [] or summary["even_shares"][0] == [16, 16]
    assert "IterableDataset" in summary["errors"]["iterable"], summary
    assert "window=0" in summary["errors"]["window"], summary
