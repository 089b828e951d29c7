"""Two containers as the two pods of a Volcano job (task "worker", job "hj"): each gets what
Volcano's env and svc plugins inject (VC_WORKER_HOSTS, VC_WORKER_NUM, VC_TASK_INDEX and
VK_TASK_INDEX, /etc/volcano/worker.host, the host name <job>-<task>-<index>) and no flag; they
meet by name (hj-worker-0.hj, as the svc plugin's headless service names them) over a podman
bridge network of the test. Pod 0 emulates an H100, pod 1 an A100 (3x slower:
HETRUN_EMULATE_SLOWDOWN), one worker each."""

from __future__ import annotations

import re
import time

from runtime import WORKSPACE, finished_at, logs, podman, record, wait_exit, wait_for

JOB, TASK = "hj", "worker"
GPUS = ["H100-SXM5-80GB:9.0:81090", "A100-SXM4-80GB:8.0:81049"]
HOSTS = [f"{JOB}-{TASK}-{i}.{JOB}" for i in range(2)]


def start_pods(containers, tmp_path, worker: list[str], env: dict | None = None) -> list[str]:
    network, subnet = containers.network()
    addresses = [str(subnet.network_address + 10 + i) for i in range(2)]
    volcano = tmp_path / "etc-volcano"
    volcano.mkdir()
    (volcano / f"{TASK}.host").write_text("".join(f"{host}\n" for host in HOSTS))
    hosts = [f"--add-host={host}:{address}" for host, address in zip(HOSTS, addresses)]
    names = []
    for index in range(2):
        plugins = {f"VC_{TASK.upper()}_HOSTS": ",".join(HOSTS), f"VC_{TASK.upper()}_NUM": "2",
                   "VC_TASK_INDEX": str(index), "VK_TASK_INDEX": str(index)}
        pod_env = {**plugins, "HETRUN_FAKE_GPUS": GPUS[index],
                   "HETRUN_EMULATE_SLOWDOWN": "ampere=3,hopper=1", **(env or {})}
        names.append(containers.start(
            f"{JOB}-{TASK}-{index}", ["run", "--", containers.profile.python, *worker],
            env=pod_env, mounts={volcano: "/etc/volcano:ro"},
            options=["--network", network, "--ip", addresses[index], "--hostname",
                     f"{JOB}-{TASK}-{index}", *hosts]))
    return names


def test_two_volcano_pods_meet_by_name_and_the_tuner_balances_h100_and_a100(containers, tmp_path):
    names = start_pods(containers, tmp_path, [
        f"{WORKSPACE}/train_ddp.py", "--steps", "26", "--window", "4", "--warmup", "2",
        "--batch", "48", "--seq", "16", "--dim", "32", "--micro-batch", "6"])
    codes = [wait_exit(name) for name in names]
    texts = [logs(name) for name in names]
    assert codes == [0, 0], "\n\n".join(texts)
    assert "train_ddp: 2 ranks (gloo)" in texts[0], texts[0]
    # The shares of rank 0 (H100) and rank 1 (A100) after the last window.
    shares = re.findall(r"window +\d+ +shares \[(\d+), (\d+)\]", texts[0])
    assert len(shares) == 6, texts[0]
    h100, a100 = map(int, shares[-1])
    print(f"\nshares of the last window: H100 {h100}, A100 {a100}")
    assert h100 + a100 == 48
    assert h100 > 1.5 * a100, texts[0]  # 3x the speed: about 36:12 once tuned


def test_stopping_one_pod_ends_the_other_with_75_within_the_peer_timeout(containers, tmp_path):
    # Endless training; both pods' hetrun settings come from the environment, as in a manifest.
    names = start_pods(containers, tmp_path, [
        f"{WORKSPACE}/train_ddp.py", "--steps", "100000", "--window", "4", "--warmup", "2",
        "--batch", "48", "--seq", "16", "--dim", "32", "--micro-batch", "6"],
        env={"HETRUN_PEER_TIMEOUT": "10s", "HETRUN_GRACE_PERIOD": "5s"})
    wait_for(lambda: re.search(r"window +2 ", logs(names[0])), "two windows of training")
    wall = time.time()
    podman("stop", "-t", "10", names[1], timeout=120, check=True)
    code = wait_exit(names[0], timeout=300)
    texts = [logs(name) for name in names]
    lost, ended = finished_at(names[1]), finished_at(names[0])
    record("podman stop issued -> pod 1 exited", lost - wall)
    record("pod 1 exited (peer loss) -> pod 0 exited", ended - lost)
    print("pod 0's last lines:\n" + "\n".join(texts[0].splitlines()[-5:]))
    assert wait_exit(names[1]) == 143, texts[1]
    assert code == 75, texts[0]
    assert "node 1 exited with 143; stopping this node's workers" in texts[0], texts[0]
