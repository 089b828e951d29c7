"""The DDP tutorial's snippet (docs/tutorials/balancing-ddp.md) and examples/python/train_ddp.py, run as a user would:
under the real `hetrun run` (HETRUN_BIN, set by ctest; else build/bin/hetrun)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import free_port

ROOT = pathlib.Path(__file__).resolve().parents[2]
HETRUN = str(pathlib.Path(os.environ.get("HETRUN_BIN", ROOT / "build" / "bin" / "hetrun")).resolve())


def hetrun_run(args, tmp_path, nproc=2, extra_env=None):
    assert os.access(HETRUN, os.X_OK), f"no hetrun binary at {HETRUN} (set HETRUN_BIN)"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HETRUN_")}
    env.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", **(extra_env or {}))
    # A free port for the job's store: 29500 (the default) may be taken on a shared machine.
    proc = subprocess.run([HETRUN, "run", "--nproc-per-node", str(nproc), "--master-port",
                           str(free_port()), "--", sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def tutorial_snippet() -> str:
    page = (ROOT / "docs" / "tutorials" / "balancing-ddp.md").read_text()
    section = page.split("## 2. A DDP script with the tuner", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_ddp_tutorials_snippet_runs_under_hetrun_run(tmp_path):
    code = tutorial_snippet()
    assert "hetrun.Tuner(global_batch=192, window=10, model=model)" in code
    (tmp_path / "train.py").write_text(code)
    out = hetrun_run(["train.py"], tmp_path)
    shares = re.findall(r"rank (\d): shares \[(\d+), (\d+)\]", out)
    assert sorted(r for r, _, _ in shares) == ["0", "1"], out
    assert shares[0][1:] == shares[1][1:], out  # every rank sees the same shares
    assert sum(map(int, shares[0][1:])) == 192
    assert "WindowReport(window=2" in out, out


def test_train_ddp_example_writes_its_summary(tmp_path):
    summary = tmp_path / "summary"
    out = hetrun_run([str(ROOT / "examples/python/train_ddp.py"), "--steps", "14", "--window",
                      "4", "--batch", "24", "--seq", "16", "--dim", "32", "--micro-batch", "5",
                      "--workers", "1", "--summary", str(summary)], tmp_path, nproc=3,
                     extra_env={"HETRUN_EMULATE_SLOWDOWN": "2"})
    assert "window  3" in out, out
    figures = dict(line.split("=", 1) for line in summary.read_text().splitlines())
    assert set(figures) >= {"samples_per_s", "ideal_samples_per_s", "idle_fraction",
                            "efficiency", "loss_first", "loss_last", "tuner_overhead",
                            "shares_final"}
    assert sum(map(int, figures["shares_final"].split(","))) == 24
    assert float(figures["samples_per_s"]) > 0
