"""The container runtime of the container tests: which image, how to run, name and remove
containers (scripts/podman: podman with docker/podman/containers.conf).

The image: HETRUN_TEST_IMAGE, default localhost/hetrun-trainer:dev (`make image`, hetrun as the
ENTRYPOINT, /opt/venv's python), whose non-root variant is the same name + "-nonroot". With
HETRUN_TEST_IMAGE=dev: a bare Debian 12 image (tests/container/dev_image.sh) with this checkout
bind-mounted read-only at its own path, this build's hetrun (HETRUN_BIN, else build/bin/hetrun)
as the entrypoint and .venv's python; its non-root variant runs as uid 1000.
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PODMAN = ROOT / "scripts" / "podman"
DEV_IMAGE = "localhost/hetrun-containers-dev:bookworm"
TRAINER_IMAGE = "localhost/hetrun-trainer:dev"
# What every test mounts: the worker scripts and the DDP example, read-only.
WORKSPACE = "/workspace"


def podman(*args: str, timeout: float = 600, check: bool = False) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(PODMAN), *args], capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
    return proc


@dataclass
class Profile:
    image: str
    nonroot_image: str
    nonroot_args: list[str]
    base_args: list[str]  # mounts and entrypoint every container gets
    python: str
    how_to_build: str

    def images(self) -> list[str]:
        return sorted({self.image, self.nonroot_image})


def profile_from_env() -> Profile:
    name = os.environ.get("HETRUN_TEST_IMAGE", TRAINER_IMAGE)
    if name != "dev":
        return Profile(name, name + "-nonroot", [], [], "/opt/venv/bin/python", "make image")
    hetrun = Path(os.environ.get("HETRUN_BIN", ROOT / "build" / "bin" / "hetrun")).resolve()
    mounts = ["-v", f"{ROOT}:{ROOT}:ro"]
    # The venv's base interpreter (pyvenv.cfg's home), at its own path too.
    cfg = (ROOT / ".venv" / "pyvenv.cfg").read_text()
    home = Path(next(line.split("=", 1)[1].strip() for line in cfg.splitlines()
                     if line.startswith("home")))
    if ROOT not in home.parents and Path("/usr") not in home.parents:
        mounts += ["-v", f"{home.parent}:{home.parent}:ro"]
    if ROOT not in hetrun.parents:
        build = hetrun.parents[1]
        mounts += ["-v", f"{build}:{build}:ro"]
    return Profile(DEV_IMAGE, DEV_IMAGE, ["--user", "1000:1000"],
                   ["--entrypoint", str(hetrun), *mounts], str(ROOT / ".venv" / "bin" / "python"),
                   "tests/container/dev_image.sh")


@dataclass
class Containers:
    """Containers of one test: unique names, every one removed at the end (even on failure)."""

    profile: Profile
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    names: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)

    def name(self, role: str) -> str:
        name = f"hetrun-test-{self.tag}-{role}"
        self.names.append(name)
        return name

    def argv(self, name: str, args: list[str], *, env: dict | None = None,
             mounts: dict | None = None, options: list[str] | None = None,
             nonroot: bool = False, detach: bool = False) -> list[str]:
        image = self.profile.nonroot_image if nonroot else self.profile.image
        argv = ["run", "--name", name, *(["-d"] if detach else [])]
        argv += self.profile.base_args + (self.profile.nonroot_args if nonroot else [])
        argv += ["-v", f"{HERE / 'workers'}:{WORKSPACE}/workers:ro",
                 "-v", f"{ROOT / 'examples' / 'python' / 'train_ddp.py'}:{WORKSPACE}/train_ddp.py:ro"]
        for host, inside in (mounts or {}).items():
            argv += ["-v", f"{host}:{inside}"]
        for key, value in {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1",
                           "PYTHONWARNINGS": "ignore", **(env or {})}.items():
            argv += ["--env", f"{key}={value}"]
        return argv + (options or []) + [image, *args]

    def run(self, role: str, args: list[str], timeout: float = 600, **kw) -> subprocess.CompletedProcess:
        """Runs a container to its end: podman's exit status is the container's."""
        return podman(*self.argv(self.name(role), args, **kw), timeout=timeout)

    def start(self, role: str, args: list[str], **kw) -> str:
        name = self.name(role)
        podman(*self.argv(name, args, detach=True, **kw), timeout=120, check=True)
        return name

    def network(self) -> tuple[str, ipaddress.IPv4Network]:
        """A bridge network of this test (podman picks a free subnet), removed at the end."""
        name = f"hetrun-test-{self.tag}"
        podman("network", "create", name, timeout=60, check=True)
        self.networks.append(name)
        subnet = podman("network", "inspect", name, "--format",
                        "{{range .Subnets}}{{.Subnet}}{{end}}", check=True).stdout.strip()
        return name, ipaddress.ip_network(subnet)

    def cleanup(self) -> None:
        for name in self.names:
            podman("rm", "-f", "-t", "0", name, timeout=120)
        for name in self.networks:
            podman("network", "rm", "-f", name, timeout=60)


def wait_exit(name: str, timeout: float = 600) -> int:
    """The container's exit code once it has stopped."""
    code = podman("wait", name, timeout=timeout, check=True).stdout.strip()
    return int(code.splitlines()[-1])


def finished_at(name: str) -> float:
    """When the container's PID 1 exited, as seen by podman (seconds since the epoch)."""
    text = podman("inspect", name, "--format", "{{.State.FinishedAt.UnixNano}}", check=True)
    return int(text.stdout.strip()) / 1e9


def logs(name: str) -> str:
    proc = podman("logs", name, timeout=60)
    return proc.stdout + proc.stderr


def wait_for(predicate, what: str, limit: float = 300, step: float = 0.2):
    """Polls `predicate` until it returns something truthy; fails after `limit` seconds (a
    generous bound for a loaded machine, never a speed assertion)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"timed out after {limit} s waiting for {what}")


def record(figure: str, seconds: float) -> None:
    """A timing for the report (never asserted): one greppable line in the test's output."""
    print(f"\nTIMING {figure}: {seconds:.2f} s", flush=True)
