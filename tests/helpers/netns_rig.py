"""Test hosts in network namespaces: a real network between launchers on one machine.

A Rig makes one namespace per host plus a hub namespace holding a bridge; each host gets a veth
pair (its end is eth0, the hub's end is a bridge port) and one address on 10.77.0.0/24 (more on
request), and its names in /etc/netns/NAMESPACE/hosts, which `ip netns exec` mounts over
/etc/hosts. Namespace names carry the test's tag and this process's id, so tests running in
parallel never meet; everything is removed on exit, on an exception and on SIGTERM/SIGINT, and
namespaces left by a rig process that died (SIGKILL) are removed by the next rig.

Needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN). Where `ip netns add` is not permitted, Rig()
raises RigUnavailable: the caller skips (exit 77), never fails.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

SUBNET = "10.77.0"
NETNS_ETC = Path("/etc/netns")
_PREFIX = "hetrun-rig-"
_NAME = re.compile(r"^hetrun-rig-[a-z0-9]+-(\d+)-[a-z0-9]+$")


class RigUnavailable(Exception):
    """Network namespaces cannot be made here (not root, no CAP_NET_ADMIN, no ip(8))."""


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def sweep_stale() -> None:
    """Removes the namespaces (and hosts files) of rig processes that no longer exist."""
    listed = _ip("netns", "list", check=False).stdout.split("\n")
    for line in listed:
        name = line.split(" ")[0]
        match = _NAME.match(name)
        if not match:
            continue
        try:
            os.kill(int(match.group(1)), 0)
            continue  # its rig still runs
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        _ip("netns", "del", name, check=False)
        shutil.rmtree(NETNS_ETC / name, ignore_errors=True)


class Host:
    def __init__(self, rig: "Rig", name: str, index: int, addresses: list[str]):
        self.rig = rig
        self.name = name
        self.index = index
        self.addresses = addresses
        self.netns = f"{rig.prefix}-{name}"
        self.port = f"p{index}"  # the hub's end of this host's veth pair

    @property
    def address(self) -> str:
        return self.addresses[0]

    def run(self, argv: list[str], log: Path, env: dict | None = None) -> subprocess.Popen:
        """Starts argv inside this host (its own process group), stdout+stderr to `log`."""
        out = open(log, "wb")
        process = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        out.close()
        self.rig.processes.append(process)
        return process

    def exec(self, argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["ip", "netns", "exec", self.netns, *argv],
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def pids(self) -> list[int]:
        """The processes inside this host's namespace."""
        listed = _ip("netns", "pids", self.netns, check=False).stdout.split()
        return [int(pid) for pid in listed if pid.isdigit()]

    def cut(self) -> None:
        """Cuts this host's link from the hub's side (its packets go nowhere, no RST)."""
        _ip("-n", self.rig.hub, "link", "set", self.port, "down")

    def restore(self) -> None:
        _ip("-n", self.rig.hub, "link", "set", self.port, "up")


class Rig:
    """hosts: names; extra: {name: number of additional addresses on its eth0}."""

    def __init__(self, tag: str, hosts: list[str], extra: dict[str, int] | None = None):
        if os.geteuid() != 0 or shutil.which("ip") is None:
            raise RigUnavailable("network namespaces need root and ip(8)")
        tag = re.sub(r"[^a-z0-9]", "", tag.lower())[:12] or "t"
        self.prefix = f"{_PREFIX}{tag}-{os.getpid()}"
        self.hub = f"{self.prefix}-hub"
        self.processes: list[subprocess.Popen] = []
        self.hosts: dict[str, Host] = {}
        extra = extra or {}
        for i, name in enumerate(hosts):
            addresses = [f"{SUBNET}.{i + 1}"]
            addresses += [f"{SUBNET}.{100 + 10 * i + k}" for k in range(extra.get(name, 0))]
            self.hosts[name] = Host(self, name, i, addresses)
        self._made: list[str] = []
        self._closed = False

    def __enter__(self) -> "Rig":
        sweep_stale()
        atexit.register(self.close)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        try:
            self._make()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def _on_signal(self, signum, frame) -> None:
        self.close()
        raise SystemExit(128 + signum)

    def _add_netns(self, name: str) -> None:
        made = _ip("netns", "add", name, check=False)
        if made.returncode != 0:
            raise RigUnavailable(f"ip netns add {name}: {made.stderr.strip()}")
        self._made.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def _make(self) -> None:
        self._add_netns(self.hub)
        _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
        _ip("-n", self.hub, "link", "set", "br0", "up")
        hosts_file = "127.0.0.1 localhost\n" + "".join(
            f"{h.address} {h.name}\n" for h in self.hosts.values()
        )
        for host in self.hosts.values():
            self._add_netns(host.netns)
            _ip("link", "add", "eth0", "netns", host.netns, "type", "veth",
                "peer", "name", host.port, "netns", self.hub)  # fmt: skip
            _ip("-n", self.hub, "link", "set", host.port, "master", "br0", "up")
            for address in host.addresses:
                _ip("-n", host.netns, "addr", "add", f"{address}/24", "dev", "eth0")
            _ip("-n", host.netns, "link", "set", "eth0", "up")
            etc = NETNS_ETC / host.netns
            etc.mkdir(parents=True, mode=0o755, exist_ok=True)
            (etc / "hosts").write_text(hosts_file)
        self._wait_for_links()

    def _wait_for_links(self, limit: float = 10.0) -> None:
        """Until every host's eth0 has carrier (the bridge forwards at once: no STP)."""
        deadline = time.monotonic() + limit
        for host in self.hosts.values():
            while "LOWER_UP" not in _ip("-n", host.netns, "link", "show", "eth0").stdout:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{host.name}: eth0 never came up")
                time.sleep(0.05)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for process in self.processes:
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                process.wait()
        for name in reversed(self._made):
            # Whatever still runs in it was started by this rig (inside its own namespaces).
            for pid in _ip("netns", "pids", name, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            _ip("netns", "del", name, check=False)
            shutil.rmtree(NETNS_ETC / name, ignore_errors=True)
        self._made.clear()
