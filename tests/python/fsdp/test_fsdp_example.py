"""examples/python/train_fsdp.py as a user runs it, under the real `hetrun run` (HETRUN_BIN, set
by ctest; else build/bin/hetrun): 3 ranks, one 2x slower, tuned and --plain."""

import os
import pathlib
import subprocess
import sys

from conftest import free_port

ROOT = pathlib.Path(__file__).resolve().parents[3]
HETRUN = str(pathlib.Path(os.environ.get("HETRUN_BIN", ROOT / "build" / "bin" / "hetrun")).resolve())
SMALL = ["--steps", "14", "--window", "4", "--batch", "24", "--seq", "16", "--dim", "32",
         "--micro-batch", "5"]


def train(tmp_path, *args):
    assert os.access(HETRUN, os.X_OK), f"no hetrun binary at {HETRUN} (set HETRUN_BIN)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HETRUN_")}
    env.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", HETRUN_EMULATE_SLOWDOWN="2")
    summary = tmp_path / "summary"
    proc = subprocess.run(
        [HETRUN, "run", "--nproc-per-node", "3", "--master-port", str(free_port()), "--",
         sys.executable, str(ROOT / "examples/python/train_fsdp.py"), *SMALL, *args,
         "--summary", str(summary)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=600)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    figures = dict(line.split("=", 1) for line in summary.read_text().splitlines())
    return proc.stdout + proc.stderr, figures


def test_train_fsdp_example_writes_its_summary(tmp_path):
    out, figures = train(tmp_path)
    assert "window  3" in out, out
    assert set(figures) >= {"samples_per_s", "efficiency", "loss_first", "loss_last",
                            "shares_final", "step_ms_median", "peak_rss_kib"}
    assert sum(map(int, figures["shares_final"].split(","))) == 24
    assert float(figures["loss_last"]) < float(figures["loss_first"]), figures


def test_train_fsdp_plain_baseline_runs_without_the_tuner(tmp_path):
    out, figures = train(tmp_path, "--plain")
    assert "no tuner (--plain)" in out, out
    assert float(figures["step_ms_median"]) > 0 and int(figures["peak_rss_kib"]) > 0
