#!/usr/bin/env python3
"""Multi-node faults over a real network: launchers on separate hosts (network namespaces, see
tests/helpers/netns_rig.py), with their workers, meeting by host name.

usage: netns_faults_test.py HETRUN SCENARIO

Scenarios (one ctest entry each, netns.SCENARIO):
  by_name            3 launchers on 3 hosts meet at MASTER_ADDR=node0 (a name); all exit 0
  link_cut           node 0's link cut while the workers run: node 1 stops its workers and
                     exits 75 within --peer-timeout (plus slack for a loaded machine)
  node0_unreachable  node 0's link down from the start: node 1 exits 75 after --rdzv-timeout,
                     naming the host
  stranger           a host without the secret claims rank 1 first: ignored, the job succeeds
  listen_address     node 0 has two addresses and listens only on MASTER_ADDR's: a connection to
                     the other one is refused

Exit 77 (skip) with a message where namespaces are not permitted or the build has no rendezvous
library; 1 with the reason on a failed expectation.
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
import tempfile

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "helpers"))
from netns_rig import Rig, RigUnavailable  # noqa: E402

SKIP = 77
GPU = "A100-SXM4-80GB:8.0:81049"
PORT = 29500
SECRET = "netns rig secret"


class Failed(Exception):
    pass


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failed(message)


class Job:
    """The launchers of one scenario; logs in a temporary folder."""

    def __init__(self, hetrun: str, rig: Rig, folder: Path):
        self.hetrun, self.rig, self.folder = hetrun, rig, folder
        self.launchers: dict[str, tuple] = {}

    def start(self, tag, host, rank, nnodes, worker, extra=(), secret=SECRET, nproc=1):
        argv = [self.hetrun, "run", "--nnodes", str(nnodes), "--node-rank", str(rank),
                "--nproc-per-node", str(nproc), "--master-addr", "node0",
                "--master-port", str(PORT), *extra, "--", "sh", "-c", worker]  # fmt: skip
        env = {"PATH": os.environ["PATH"], "HETRUN_FAKE_GPUS": ",".join([GPU] * nproc),
               "HETRUN_TERMINATION_LOG": str(self.folder / f"{tag}.termination")}  # fmt: skip
        if secret is not None:
            env["HETRUN_JOB_SECRET"] = secret
        log = self.folder / f"{tag}.log"
        process = self.rig[host].run(argv, log, env)
        self.launchers[tag] = (process, log, time.monotonic())
        return process

    def log(self, tag: str) -> str:
        return self.launchers[tag][1].read_text(errors="replace")

    def wait_for_log(self, tag: str, text: str, limit: float = 60) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if text in self.log(tag):
                return
            if self.launchers[tag][0].poll() is not None and text not in self.log(tag):
                break
            time.sleep(0.05)
        raise Failed(f"{tag}: no '{text}' in its log:\n{self.log(tag)}")

    def wait(self, tag: str, limit: float = 60) -> tuple[int, float]:
        """Exit code and the time it ended (monotonic)."""
        process = self.launchers[tag][0]
        try:
            code = process.wait(timeout=limit)
        except Exception:
            raise Failed(f"{tag}: still running after {limit} s:\n{self.log(tag)}")
        return code, time.monotonic()

    def dump(self) -> None:
        for tag in self.launchers:
            print(f"--- {tag} ---\n{self.log(tag)}")


def by_name(job: Job) -> None:
    worker = "echo rank=$RANK world=$WORLD_SIZE master=$MASTER_ADDR"
    for rank in range(3):
        job.start(f"node{rank}", f"node{rank}", rank, 3, worker, nproc=2)
    for rank in range(3):
        code, _ = job.wait(f"node{rank}")
        log = job.log(f"node{rank}")
        expect(code == 0, f"node{rank} exited {code}:\n{log}")
        expect(log.count("world=6 master=node0") == 2, f"node{rank}: two workers of 6:\n{log}")
    print("3 launchers on 3 hosts met at node0 by name")


def link_cut(job: Job) -> None:
    extra = ["--peer-timeout", "3s", "--grace-period", "2s"]
    worker = "echo started rank=$RANK; exec sleep 120"
    job.start("node0", "node0", 0, 2, worker, extra)
    job.start("node1", "node1", 1, 2, worker, extra)
    job.wait_for_log("node0", "started rank=0")
    job.wait_for_log("node1", "started rank=1")
    time.sleep(1.5)  # a few beats through the link
    cut = time.monotonic()
    job.rig["node0"].cut()
    code, ended = job.wait("node1", 60)
    seconds = ended - cut
    print(f"node 0's link cut: node 1 exited {code} after {seconds:.2f} s (--peer-timeout 3s)")
    expect(code == 75, f"node 1 exited {code}, not 75:\n{job.log('node1')}")
    expect(seconds < 3 + 12, f"node 1 took {seconds:.2f} s, far beyond --peer-timeout 3s")
    expect("node 0 lost" in job.log("node1") or "lost the rendezvous store" in job.log("node1"),
           f"node 1 does not say node 0 was lost:\n{job.log('node1')}")  # fmt: skip
    left = job.rig["node1"].pids()
    expect(left == [], f"processes still run on node 1 after hetrun's exit: pids {left}")
    code0, ended0 = job.wait("node0", 60)
    print(f"node 0 (cut off) exited {code0} after {ended0 - cut:.2f} s")
    expect(code0 == 75, f"node 0 exited {code0}, not 75:\n{job.log('node0')}")


def node0_unreachable(job: Job) -> None:
    job.rig["node0"].cut()
    job.start("node1", "node1", 1, 2, "echo never", ["--rdzv-timeout", "3s"])
    start = job.launchers["node1"][2]
    code, ended = job.wait("node1", 60)
    log = job.log("node1")
    print(f"node 0 unreachable: node 1 exited {code} after {ended - start:.2f} s (--rdzv-timeout 3s)")
    expect(code == 75, f"node 1 exited {code}, not 75:\n{log}")
    expect(f"node0:{PORT}" in log, f"no line names node0:{PORT}:\n{log}")
    expect("never" not in log.replace("echo never", ""), f"a worker ran:\n{log}")
    expect(ended - start < 3 + 15, f"took {ended - start:.2f} s")


def stranger(job: Job) -> None:
    job.start("node0", "node0", 0, 2, "echo worker rank=$RANK", ["--rdzv-timeout", "30s"])
    job.wait_for_log("node0", "joined as node 0")
    job.start("stranger", "stranger", 1, 2, "echo STRANGER RAN", ["--rdzv-timeout", "30s"],
              secret=None)  # fmt: skip
    job.wait_for_log("stranger", "waiting for node 0 to open the rendezvous")
    job.start("node1", "node1", 1, 2, "echo worker rank=$RANK", ["--rdzv-timeout", "30s"])
    for tag in ("node1", "node0"):
        code, _ = job.wait(tag)
        expect(code == 0, f"{tag} exited {code}:\n{job.log(tag)}")
    expect("worker rank=1" in job.log("node1"), job.log("node1"))
    code, _ = job.wait("stranger")
    expect(code != 0, f"the stranger's launcher exited 0:\n{job.log('stranger')}")
    expect("STRANGER RAN" not in job.log("stranger").replace("echo STRANGER RAN", ""),
           f"the stranger's worker ran:\n{job.log('stranger')}")  # fmt: skip
    print(f"a stranger without the secret claimed rank 1 first: ignored (it exited {code}); "
          "the job succeeded")  # fmt: skip


def connect(host, address: str) -> str:
    probe = (f"import socket\ns = socket.socket()\ns.settimeout(5)\n"
             f"try:\n    s.connect(('{address}', {PORT})); print('connected')\n"
             f"except OSError as e:\n    print(type(e).__name__)\n")  # fmt: skip
    return host.exec([sys.executable, "-c", probe]).stdout.strip()


def listen_address(job: Job) -> None:
    worker = "echo started rank=$RANK; sleep 4"
    job.start("node0", "node0", 0, 2, worker, ["--rdzv-timeout", "30s"])
    job.start("node1", "node1", 1, 2, worker, ["--rdzv-timeout", "30s"])
    job.wait_for_log("node0", "started rank=0")
    node0, node1 = job.rig["node0"], job.rig["node1"]
    other = node0.addresses[1]
    on_master = connect(node1, node0.address)
    on_other = connect(node1, other)
    print(f"node 0 at {node0.address} (MASTER_ADDR node0) and {other}: "
          f"{node0.address}:{PORT} -> {on_master}, {other}:{PORT} -> {on_other}")  # fmt: skip
    expect(on_master == "connected", f"MASTER_ADDR's address: {on_master}")
    expect(on_other == "ConnectionRefusedError", f"the other address: {on_other}")
    for tag in ("node0", "node1"):
        code, _ = job.wait(tag)
        expect(code == 0, f"{tag} exited {code}:\n{job.log(tag)}")


SCENARIOS = {
    "by_name": (by_name, ["node0", "node1", "node2"], {}),
    "link_cut": (link_cut, ["node0", "node1"], {}),
    "node0_unreachable": (node0_unreachable, ["node0", "node1"], {}),
    "stranger": (stranger, ["node0", "node1", "stranger"], {}),
    "listen_address": (listen_address, ["node0", "node1"], {"node0": 1}),
}


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[2] not in SCENARIOS:
        print(__doc__, file=sys.stderr)
        return 64
    hetrun, name = sys.argv[1], sys.argv[2]
    plugin = Path(hetrun).resolve().parent.parent / "lib" / "libhetrun_rendezvous.so"
    if not plugin.exists():
        print(f"SKIP: {plugin} not built (configured without libtorch): no multi-node rendezvous")
        return SKIP
    scenario, hosts, extra = SCENARIOS[name]
    try:
        rig = Rig(name, hosts, extra).__enter__()
    except RigUnavailable as e:
        print(f"SKIP: network namespaces are not permitted here ({e})")
        return SKIP
    with tempfile.TemporaryDirectory(prefix=f"netns-{name}-") as folder:
        job = Job(hetrun, rig, Path(folder))
        try:
            scenario(job)
        except Failed as e:
            job.dump()
            print(f"FAILED: {name}: {e}")
            return 1
        finally:
            rig.close()
    print(f"PASSED: {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
