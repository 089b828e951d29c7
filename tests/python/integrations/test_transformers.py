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


def test_a_run_resumed_from_a_checkpoint_ends_where_the_uninterrupted_one_does(tmp_path):
    # Tuned for 8 steps with a checkpoint, then a new HetrunTrainer resumed from it to step 16:
    # the data order continues at step 8 and the split starts over (docs/how-to/hf-trainer.md).
    summary = hetrun_mixed("hf_worker.py", ["--kind", "sample", "--steps", "16", "--resume"],
                           tmp_path)
    assert summary["resumed_steps"] == 8, summary  # it resumed at step 8, not from scratch
    assert summary["resumed_max_param_diff"] < 1e-6, summary
    assert summary["resumed_shares"] and sum(summary["resumed_shares"][-1]) == 8 * 3 * 2, summary


# Issue 39 item 11: HetrunTrainer cut each epoch into len // global batch steps and never trained
# the rest (100 samples, global batch 15 = 5 x 3 ranks: 6 steps, 90 samples; the Trainer trains
# all 100 in 7). The rest is one more, smaller step unless dataloader_drop_last.
def test_every_sample_of_an_epoch_is_trained_unless_drop_last(tmp_path):
    args = ["--kind", "sample", "--batch", "5", "--accumulate", "1", "--epoch-samples", "100"]
    for name in ("all", "dropped"):
        (tmp_path / name).mkdir()
    summary = hetrun_mixed("hf_worker.py", args, tmp_path / "all")
    assert summary == {"epoch_steps": 7, "epoch_samples": 100}, summary
    dropped = hetrun_mixed("hf_worker.py", args + ["--drop-last"], tmp_path / "dropped")
    assert dropped == {"epoch_steps": 6, "epoch_samples": 90}, dropped
