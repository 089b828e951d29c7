"""hetrun as PID 1 of a real container (podman + runc, tests/container/runtime.py): the image's
ENTRYPOINT, exit codes, `podman stop`, the memory limit's OOM killer, orphans, a read-only root
and the non-root image. Each test asserts behaviour (codes, messages, markers); timings are
printed as "TIMING ..." lines for the record, never asserted."""

from __future__ import annotations

import re
import time

from runtime import WORKSPACE, finished_at, logs, podman, record, wait_exit, wait_for

GPUS = "H100-SXM5-80GB:9.0:81090,A100-SXM4-80GB:8.0:81049"


def hetrun_run(containers, *worker: str, nproc: int = 2) -> list[str]:
    return ["run", "--nproc-per-node", str(nproc), "--fake-gpus", GPUS, "--",
            containers.profile.python, *worker]


def test_the_entrypoint_without_arguments_exits_64(containers):
    proc = containers.run("noargs", [])
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert "usage" in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr


def test_a_ddp_job_with_the_tuner_runs_and_exits_0(containers):
    proc = containers.run("ddp", hetrun_run(
        containers, f"{WORKSPACE}/train_ddp.py", "--steps", "14", "--window", "4", "--batch",
        "24", "--seq", "16", "--dim", "32", "--micro-batch", "5"),
        env={"HETRUN_EMULATE_SLOWDOWN": "ampere=3,hopper=1"})
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    assert "train_ddp: 2 ranks (gloo)" in text and "tuner on" in text, text
    windows = re.findall(r"window +(\d+) +shares \[(\d+), (\d+)\]", text)
    assert [w for w, _, _ in windows] == ["1", "2", "3"], text
    assert all(int(a) + int(b) == 24 for _, a, b in windows), windows
    assert "every worker succeeded" in text, text


def test_a_workers_exit_code_is_the_containers(containers, out):
    code = "import os, sys; sys.exit(3 if os.environ['RANK'] == '1' else 0)"
    proc = containers.run("code", hetrun_run(containers, "-c", code),
                          mounts={out: "/out", out / "termination-log": "/dev/termination-log"})
    assert proc.returncode == 3, proc.stdout + proc.stderr
    reason = (out / "termination-log").read_text()
    assert reason.startswith("hetrun: rank 1 (local rank 1) exited with code 3"), reason


def test_podman_stop_sends_sigterm_first_and_the_container_exits_143(containers, out):
    name = containers.start("stop", hetrun_run(containers, f"{WORKSPACE}/workers/sigterm_worker.py"),
                            mounts={out: "/out"}, env={"HETRUN_GRACE_PERIOD": "5s"})
    wait_for(lambda: all((out / f"ready.{r}").exists() for r in (0, 1)), "both workers to start")
    for rank in (0, 1):  # hetrun is PID 1 and the workers' parent
        assert (out / f"ready.{rank}").read_text().strip() == "parent 1"
    started, wall = time.monotonic(), time.time()
    stop = podman("stop", "-t", "10", name, timeout=120)
    stopped = time.monotonic() - started
    assert stop.returncode == 0, stop.stderr
    code = wait_exit(name)
    text = logs(name)
    record("podman stop -t 10 issued -> hetrun (PID 1) exited", finished_at(name) - wall)
    record("podman stop -t 10 returned", stopped)
    # 143: hetrun's own SIGTERM exit; had the grace period run out podman's SIGKILL made it 137.
    assert code == 143, text
    for rank in (0, 1):
        assert (out / f"sigterm.{rank}").read_text().startswith("SIGTERM"), text
    assert "received SIGTERM" in text, text


def test_a_worker_killed_by_the_memory_limit_is_reported_as_oom_killed(containers, out):
    proc = containers.run("oom", hetrun_run(containers, f"{WORKSPACE}/workers/oom_worker.py"),
                          mounts={out / "termination-log": "/dev/termination-log"},
                          options=["--memory", "256m", "--memory-swap", "256m"])
    text = proc.stdout + proc.stderr
    assert proc.returncode == 137, text
    reason = (out / "termination-log").read_text()
    expected = ("hetrun: rank 1 (local rank 1) was killed by the OOM killer (SIGKILL; memory "
                "cgroup limit: 268435456 bytes (256 MiB), from ")
    assert reason.startswith(expected), reason
    assert "killed by the OOM killer" in text, text  # the exit report in hetrun's log


def test_orphaned_grandchildren_are_reaped(containers, out):
    proc = containers.run("orphans", hetrun_run(containers, f"{WORKSPACE}/workers/orphans_worker.py"),
                          mounts={out: "/out"})
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    assert "orphans' parents ['1']" in text, text  # re-parented to hetrun, PID 1
    assert "zombies []" in text and "orphans reaped" in text, text


def test_a_read_only_root_with_a_tmpfs_tmp_works(containers):
    proc = containers.run("readonly", hetrun_run(containers, f"{WORKSPACE}/workers/dist_check.py"),
                          options=["--read-only", "--tmpfs", "/tmp"])
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    for rank in (0, 1):
        assert re.search(rf"rank {rank}: sum 3 uid \d+ parent 1 root read-only tmp ok", text), text


def test_the_non_root_image_works(containers, out):
    proc = containers.run("nonroot", hetrun_run(containers, f"{WORKSPACE}/workers/dist_check.py"),
                          nonroot=True, mounts={out / "termination-log": "/dev/termination-log"})
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    uids = re.findall(r"rank \d: sum 3 uid (\d+) parent 1 root (\S+) tmp ok", text)
    assert len(uids) == 2, text
    assert all(uid != "0" and root != "writable" for uid, root in uids), uids
    # A failure as that user still reaches the termination log.
    proc = containers.run("nonroot-fail", hetrun_run(containers, "-c", "raise SystemExit(5)", nproc=1),
                          nonroot=True, mounts={out / "termination-log": "/dev/termination-log"})
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "exited with code 5" in (out / "termination-log").read_text()
