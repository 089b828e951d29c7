"""examples/python/train_deepspeed.py as a user runs it, under the real `hetrun run` (HETRUN_BIN,
set by ctest; else build/bin/hetrun): 3 ranks (2 emulated H100 + 1 A100 at 3x), ZeRO-3 with the
micro-batch capped at 2 (ZeRO-3's job-wide count then exceeds the slow rank's share: it runs empty
micro-batches), tuned and --no-tune; and a batch the ranks cannot split evenly, refused."""

import os
import pathlib
import subprocess
import sys

from conftest import free_port

ROOT = pathlib.Path(__file__).resolve().parents[3]
HETRUN = str(pathlib.Path(os.environ.get("HETRUN_BIN",
                                         ROOT / "build" / "bin" / "hetrun")).resolve())
GPUS = "H100-SXM5-80GB:9.0:81090,H100-SXM5-80GB:9.0:81090,A100-SXM4-80GB:8.0:81049"
SMALL = ["--steps", "14", "--window", "4", "--batch", "48", "--seq", "16", "--dim", "32",
         "--micro-batch", "2", "--stage", "3"]


def train(tmp_path, *args):
    assert os.access(HETRUN, os.X_OK), f"no hetrun binary at {HETRUN} (set HETRUN_BIN)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HETRUN_")}
    env.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore",
               HETRUN_EMULATE_SLOWDOWN="ampere=3,hopper=1")
    summary = tmp_path / "summary"
    proc = subprocess.run(
        [HETRUN, "run", "--nproc-per-node", "3", "--master-port", str(free_port()),
         "--fake-gpus", GPUS, "--", sys.executable,
         str(ROOT / "examples/python/train_deepspeed.py"), *SMALL, *args,
         "--summary", str(summary)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=400)
    figures = {}
    if summary.exists():
        figures = dict(line.split("=", 1) for line in summary.read_text().splitlines())
    return proc, figures


def test_train_deepspeed_example_balances_the_slow_rank_and_writes_its_summary(tmp_path):
    proc, figures = train(tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"exit {proc.returncode}\n{out}"
    assert "DeepSpeed 0.19.8 ZeRO-3" in out and "window  3" in out, out
    assert set(figures) >= {"samples_per_s", "efficiency", "loss_first", "loss_last",
                            "shares_final", "efficiency_windows"}, figures
    shares = list(map(int, figures["shares_final"].split(",")))
    assert sum(shares) == 48 and shares[2] < min(shares[:2]), figures
    # the job-wide micro-batch count (ceil(largest share / 2)) is above the A100's share: it ran
    # micro-batches of no rows, and trained on
    assert shares[2] < -(-max(shares) // 2), figures
    assert len(figures["efficiency_windows"].split(",")) == 3, figures
    assert float(figures["loss_last"]) < float(figures["loss_first"]), figures


def test_train_deepspeed_example_uniform_keeps_the_even_split(tmp_path):
    proc, figures = train(tmp_path, "--no-tune")
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert figures["shares_final"] == "16,16,16", figures


def test_train_deepspeed_example_refuses_a_batch_the_ranks_cannot_split(tmp_path):
    proc, _ = train(tmp_path, "--batch", "47")
    assert proc.returncode != 0
    assert "--batch 47 is not a multiple of the 3 ranks" in proc.stdout + proc.stderr
