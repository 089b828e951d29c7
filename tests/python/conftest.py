"""Shared fixtures: real worker processes over Gloo on 127.0.0.1.

run_workers(name, n, tmp_path, env) starts `python workers.py NAME OUT` n times (or another
worker file: script=) with a
torchrun-style environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT), waits with a
generous deadline, and returns each rank's JSON result. A failing worker fails the test with its
stderr."""

from __future__ import annotations

import json
import os
import pathlib
import random
import socket
import subprocess
import sys
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent
WORKERS = HERE / "workers.py"
DEADLINE_S = 300  # generous: the machine may be loaded; tests never assert speed


def free_port() -> int:
    # Below Linux's ephemeral range (32768-60999): no outgoing connection of a parallel test
    # takes the port between this call and the listener's bind (as tests/testing/free_port.cc).
    for _ in range(64):
        port = random.randint(20000, 32767)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker_env(rank: int, world: int, port: int, extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HETRUN_", "OMPI_", "PMI_"))}
    env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
               LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    per_rank = extra.get("per_rank", {})
    env.update({k: v for k, v in extra.items() if k != "per_rank"})
    env.update(per_rank.get(rank, {}))
    return env


def run_workers(name: str, world: int, out: pathlib.Path, extra: dict | None = None,
                args: tuple = (), script: pathlib.Path = WORKERS) -> list:
    extra = extra or {}
    port = free_port()
    procs = []
    for rank in range(world):
        log = open(out / f"rank{rank}.log", "w")
        procs.append((subprocess.Popen(
            [sys.executable, str(script), name, str(out), *args],
            env=worker_env(rank, world, port, extra), stdout=log, stderr=subprocess.STDOUT), log))
    failures = []
    deadline = time.monotonic() + DEADLINE_S
    codes = [None] * world
    while any(c is None for c in codes) and time.monotonic() < deadline:
        for rank, (proc, _) in enumerate(procs):
            if codes[rank] is None:
                codes[rank] = proc.poll()
        if any(c not in (None, 0) for c in codes):
            time.sleep(5)  # a failed rank: give the others a moment, then stop them
            break
        time.sleep(0.05)
    for rank, (proc, log) in enumerate(procs):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            codes[rank] = codes[rank] if codes[rank] is not None else "killed (deadline or peer)"
        else:
            codes[rank] = proc.returncode
        log.close()
        if codes[rank] != 0:
            failures.append(f"rank {rank} exited {codes[rank]}:\n"
                            f"{(out / f'rank{rank}.log').read_text()[-4000:]}")
    if failures:
        pytest.fail("\n".join(failures))
    return [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]


@pytest.fixture
def workers(tmp_path):
    def run(name, world, extra=None, args=(), script=WORKERS):
        return run_workers(name, world, tmp_path, extra, args, script)
    return run
