"""HetrunTrainer (hetrun.integrations.transformers) with TrainingArguments(deepspeed=config): the
real Trainer, DeepSpeed ZeRO over Gloo on CPU, 3 processes under hetrun run (2 H100 + 1 A100
emulated at 6x), float32 (hf_worker.py --deepspeed STAGE)."""

from launch import hetrun_mixed


def test_the_hf_trainer_with_zero2_balances_with_the_untuned_update(tmp_path):
    # HetrunTrainer(args=TrainingArguments(deepspeed=config)) under hetrun run, 2 H100 + 1 A100
    # at 6x: tuned and untuned (tune=False) in one launch, float32.
    args = ["--kind", "sample", "--steps", "12", "--accumulate", "2", "--deepspeed", "2"]
    summary = hetrun_mixed("hf_worker.py", args, tmp_path)
    last = summary["tuned_shares"][-1]
    assert sum(last) == 8 * 3 * 2 and last[2] < min(last[0], last[1]), summary
    assert all(shares == [16, 16, 16] for shares in summary["even_shares"]), summary
    assert summary["max_param_diff"] < 1e-5, summary


def test_the_hf_trainer_with_zero3_resumes_where_the_uninterrupted_run_ends(tmp_path):
    # ZeRO-3: tuned to step 8 with a DeepSpeed checkpoint (re-planned on the way), a new
    # HetrunTrainer resumed from it to step 16 (the data order continues, the split starts over
    # and is re-tuned): the untuned run's parameters.
    args = ["--kind", "sample", "--steps", "16", "--accumulate", "2", "--deepspeed", "3",
            "--resume"]
    summary = hetrun_mixed("hf_worker.py", args, tmp_path)
    assert summary["resumed_steps"] == 8, summary
    assert summary["resumed_max_param_diff"] < 1e-5, summary
    last = summary["resumed_shares"][-1]
    assert sum(last) == 8 * 3 * 2 and last[2] < min(last[0], last[1]), summary
