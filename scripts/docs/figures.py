#!/usr/bin/env python3
"""The documentation's figures, from real runs on this machine (`make docs-update` runs it).

    figures.py run  BUILD RUNS      run the jobs, keep their logs and files in RUNS
    figures.py draw RUNS ASSETS     draw docs/assets/figures/*.svg from RUNS (light and dark)
    figures.py update BUILD RUNS ASSETS   both

Nothing is drawn by hand: every bar, line and block comes from a log line or file of a run that
`run` started (the emulated 4 H100 + 2 A100 node of `make demo`, HETRUN_EMULATE_SLOWDOWN), and
each figure's caption names the run and the machine (RUNS/machine.json: cores, load average).
`run` takes about 10 minutes on 2 idle cores. A run that fails stops the script with its log.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import figure_pages  # noqa: E402  (the drawings)

ROOT = pathlib.Path(__file__).resolve().parents[2]
H100 = "H100-SXM5-80GB:9.0:81090"
A100 = "A100-SXM4-80GB:8.0:81049"
A100_40 = "A100-SXM4-40GB:8.0:40339"  # usable MiB: docs/reference (cudaGetDeviceProperties)
NODE = ",".join([H100] * 4 + [A100] * 2)
SLOWDOWN = "ampere=3.17,hopper=1.0"


def sh(cmd, log: pathlib.Path, env=None, timeout=1200, ok=(0,)) -> str:
    full = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore", **(env or {}))
    print(f"figures: $ {' '.join(map(str, cmd))}", flush=True)
    proc = subprocess.run([str(c) for c in cmd], cwd=ROOT, env=full, capture_output=True,
                          text=True, timeout=timeout)
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode not in ok:
        sys.exit(f"figures: {cmd[0]} exited with {proc.returncode}; its output is in {log}")
    return proc.stdout + proc.stderr


def machine(runs: pathlib.Path, phase: str) -> None:
    path = runs / "machine.json"
    info = json.loads(path.read_text()) if path.exists() else {}
    info["cores"] = os.cpu_count()
    info.setdefault("load", {})[phase] = round(os.getloadavg()[0], 1)
    info["date"] = time.strftime("%Y-%m-%d")
    path.write_text(json.dumps(info, indent=1))


#: the balancing runs: engine, example, its arguments, the emulation (DeepSpeed's per step host
#: work is no GPU's: its A100 ranks are stretched per sample, docs/how-to/deepspeed.md)
BALANCING = (("ddp", "train_ddp.py", [], SLOWDOWN),
             ("fsdp", "train_fsdp.py", [], SLOWDOWN),
             ("deepspeed", "train_deepspeed.py", ["--stage", "3"], "ampere=3.17/sample,hopper=1.0"))


def run_balancing(build: pathlib.Path, runs: pathlib.Path, python: str) -> None:
    hetrun = build / "bin" / "hetrun"
    for engine, script, args, slowdown in BALANCING:
        for mode, extra in (("tuned", []), ("uniform", ["--no-tune"])):
            machine(runs, f"{engine}-{mode}")
            sh([hetrun, "run", "--master-port", "0", "--nproc-per-node", "6", "--cpu-bind",
                "spread", "--fake-gpus", NODE, "--", python, ROOT / "examples/python" / script,
                *args, *extra], runs / f"{engine}-{mode}.log",
               env={"HETRUN_EMULATE_SLOWDOWN": slowdown})


def run_pipeline(build: pathlib.Path, runs: pathlib.Path) -> None:
    machine(runs, "pipeline")
    sh([ROOT / "scripts/demo_pipeline", build], runs / "pipeline.log")


def run_fail_slow(build: pathlib.Path, runs: pathlib.Path, python: str) -> None:
    machine(runs, "fail-slow")
    out = runs / "fail-slow"
    out.mkdir(exist_ok=True)
    gpus = ",".join([H100] * 3 + [A100])
    sh([build / "bin/hetrun", "run", "--master-port", "0", "--nproc-per-node", "4",
        "--fake-gpus", gpus, "--fail-slow", "warn", "--", python,
        ROOT / "tests/python/health/fail_slow_worker.py", "--out", out, "--steps", "120"],
       runs / "fail-slow.log", env={"HETRUN_EMULATE_SLOWDOWN": "ampere=3,hopper=1,rank1=2.0@step40"})


def run_memory(build: pathlib.Path, runs: pathlib.Path) -> None:
    gpus = ",".join([H100] * 2 + [A100] * 2 + [A100_40] * 2)
    (runs / "memory-gpus.txt").write_text(gpus + "\n")
    sh([build / "bin/hetrun", "run", "--dry-run", "--master-port", "0", "--nproc-per-node", "6",
        "--fake-gpus", gpus, "--", "/bin/true"], runs / "memory.log")


def run_process(build: pathlib.Path, runs: pathlib.Path) -> None:
    machine(runs, "process")
    gpus = ",".join([H100, A100])
    preflight = []
    kernels = build / "kernels/libhetrun_kernels.so"
    if kernels.exists():
        preflight = ["--scan", kernels, "--arch-list", "8.0;9.0+PTX"]
    sh([build / "bin/hetrun", "run", "--master-port", "0", "--nproc-per-node", "2",
        "--fake-gpus", gpus, *preflight, "--check-collectives", "--",
        build / "examples/trainer/hetrun_trainer", "--steps", "12", "--window", "2"],
       runs / "process.log", env={"HETRUN_LOG_LEVEL": "debug",
                                  "HETRUN_EMULATE_SLOWDOWN": SLOWDOWN})


def run_all(build: pathlib.Path, runs: pathlib.Path) -> None:
    runs.mkdir(parents=True, exist_ok=True)
    (runs / "machine.json").unlink(missing_ok=True)
    python = str(ROOT / ".venv/bin/python")
    run_memory(build, runs)
    run_process(build, runs)
    run_fail_slow(build, runs, python)
    run_pipeline(build, runs)
    run_balancing(build, runs, python)


def main(argv) -> int:
    if len(argv) < 3 or argv[0] not in ("run", "draw", "update"):
        print(__doc__, file=sys.stderr)
        return 64
    if argv[0] in ("run", "update"):
        run_all(pathlib.Path(argv[1]).resolve(), pathlib.Path(argv[2]).resolve())
    if argv[0] == "draw":
        figure_pages.draw_all(pathlib.Path(argv[1]), pathlib.Path(argv[2]))
    elif argv[0] == "update":
        if len(argv) != 4:
            print(__doc__, file=sys.stderr)
            return 64
        figure_pages.draw_all(pathlib.Path(argv[2]), pathlib.Path(argv[3]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
