"""Launching the integration workers as a user would (imported by the tests here): under the
real `hetrun run` with an emulated 2 x H100 + 1 x A100 node (the A100 rank's compute stretched
6x), or under torchrun."""

import json
import os
import pathlib
import random
import socket
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
HETRUN = str(pathlib.Path(os.environ.get("HETRUN_BIN", ROOT / "build" / "bin" / "hetrun")).resolve())
HERE = pathlib.Path(__file__).resolve().parent
H100, A100 = "H100-SXM5-80GB:9.0:81090", "A100-SXM4-80GB:8.0:81049"


def free_port() -> int:
    # Below the ephemeral range, as tests/python/conftest.py (no outgoing connection takes it).
    for _ in range(64):
        port = random.randint(20000, 32767)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port")


def environment(extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HETRUN_", "PET_", "OMPI_"))}
    env.update(OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", **(extra or {}))
    return env


def summary_of(proc, out):
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    return json.loads((out / "summary.json").read_text())


def hetrun_mixed(worker, args, tmp_path):
    """2 emulated H100 ranks and 1 A100 rank at 6x under hetrun run; the worker's summary."""
    cmd = [HETRUN, "run", "--nproc-per-node", "3", "--fake-gpus", f"{H100},{H100},{A100}",
           "--master-port", str(free_port()), "--", sys.executable, str(HERE / worker),
           "--out", str(tmp_path), *args]
    env = environment({"HETRUN_EMULATE_SLOWDOWN": "ampere=6,hopper=1"})
    proc = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    return summary_of(proc, tmp_path)


def torchrun_even(worker, args, tmp_path):
    """The worker's untuned run under a real torchrun (2 processes); its summary."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
           "--master-port", str(free_port()), str(HERE / worker), "--out", str(tmp_path),
           "--only-even", *args]
    proc = subprocess.run(cmd, env=environment(), cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    return summary_of(proc, tmp_path)


def assert_balanced_and_exact(summary, global_batch):
    """The tuned run's last split favours the fast ranks; its parameters equal the even run's."""
    last = summary["tuned_shares"][-1]
    assert sum(last) == global_batch, summary
    assert last[2] < min(last[0], last[1]), f"the A100 rank kept {last}: {summary}"
    assert all(shares == summary["even_shares"][0] for shares in summary["even_shares"]), summary
    assert summary["max_param_diff"] < 1e-6, summary
