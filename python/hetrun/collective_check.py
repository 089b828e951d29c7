"""The collective check before training: `python -m hetrun.collective_check`, one probe per local
GPU, started by `hetrun run --check-collectives` after the rendezvous and before the workers
(docs/how-to/collective-check.md, docs/ARCHITECTURE.md §5.11).

Every probe joins one job-wide process group (NCCL on GPUs, Gloo on CPU) at the store the
workers use, under a key prefix of its own (hetrun/collective_check/, plus 16 hex digits derived
from HETRUN_COLLECTIVE_CHECK_KEY when the job has a secret), so the workers' first attempt finds
no key of the check. Before joining, it checks what it can prove on this node alone: the backend
exists in this torch, and GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME (the backend's) name an
interface of this node; either fault is exit 78 naming it (a peer not reachable yet stays 75).
It runs all-reduce (sum) and all-gather over messages from 8 B to 8 MiB, doubling, of float32
values that are small integers (exact in any summation order), different per rank and per
element, and compares each result with the known one bit for bit. The ranks then share what they
found through the store (not through the collective under test), one record a rank
(result/<rank>), so every rank, and every node's hetrun, reaches the same verdict. With a job
secret each record is sealed like hetrun's rendezvous records (HMAC-SHA256 with
HETRUN_COLLECTIVE_CHECK_KEY over the key and the payload); a record that does not verify, and
any entry of a record whose fields are not what a probe writes (a rank that is not this
record's, a size that is not the check's), is ignored with a line on stderr. When every value
was right, it measures the bandwidth hetrun plan's links stand for: point-to-point between
adjacent pipeline stages and all-reduce within each stage's data-parallel group (with a layout,
HETRUN_PLAN), and all-reduce over the whole job.

Findings go to one file per rank in HETRUN_RUN_DIR (rank_<R>.json, private, written
atomically), progress to progress_rank_<R> before every operation (what a stalled rank was
doing). The wrong values are summarised (the first WRONG_KEPT of them, their count, every op's
sizes, every rank), so a result grows with the job by one short entry a rank. hetrun reads them
and decides the exit code; the probe exits 0 once its verdict is written (right or wrong
values), 75 when a collective raised, 78 when it cannot run at all (then its result holds
"cannot_run": the reason).

HETRUN_COLLECTIVE_CHECK_FAULT is a test hook: wrong:RANK:BYTES[:OP] makes rank RANK see a wrong
value in OP (all_reduce or all_gather; both when absent) at BYTES; stall:RANK:BYTES[:OP] makes it
wait forever before that operation; forge:RANK:BYTES[:OP] makes rank RANK publish, instead of its
own record, an unsealed one claiming a wrong value there (what another store client could write).
"""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import socket
import statistics
import sys
import time
from typing import Dict, List, Optional, Tuple

SIZES = [8 << i for i in range(21)]  #: message bytes per rank: 8 B .. 8 MiB, doubling
OPS = ("all_reduce", "all_gather")
BANDWIDTH_BYTES = 16 << 20  #: message of the bandwidth measurements
BANDWIDTH_ITERATIONS = 5  #: timed iterations after one warm-up; the median counts
PREFIX = "hetrun/collective_check"
WRONG_KEPT = 8  #: wrong values a result keeps in full (the rest: counted, sizes and ranks kept)
_MAC_TAG = "\n#hmac-sha256:"
EXIT_COLLECTIVE_ERROR = 75
EXIT_CANNOT_RUN = 78


class CannotRun(Exception):
    """The check cannot run here (bad environment, bad test hook): exit 78 with the message."""


def size_text(n: int) -> str:
    """8 B, 512 KiB, 8 MiB: the sizes as hetrun's report writes them."""
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def _int_env(name: str, default: Optional[int] = None) -> int:
    text = os.environ.get(name)
    if text is None or text == "":
        if default is None:
            raise CannotRun(f"{name} is not set (run the check under hetrun run --check-collectives)")
        return default
    try:
        return int(text)
    except ValueError:
        raise CannotRun(f"{name}={text!r} is not an integer") from None


def parse_fault(text: Optional[str], world_size: int) -> Optional[Tuple[str, int, int, Optional[str]]]:
    """HETRUN_COLLECTIVE_CHECK_FAULT: (kind, rank, bytes, op or None); None when unset."""
    if not text:
        return None
    parts = text.split(":")
    bad = f"HETRUN_COLLECTIVE_CHECK_FAULT={text!r}: "
    if len(parts) not in (3, 4) or parts[0] not in ("wrong", "stall", "forge"):
        raise CannotRun(bad + "expected wrong:RANK:BYTES[:OP], stall:RANK:BYTES[:OP] or "
                        "forge:RANK:BYTES[:OP]")
    try:
        rank, size = int(parts[1]), int(parts[2])
    except ValueError:
        raise CannotRun(bad + "RANK and BYTES must be integers") from None
    if not 0 <= rank < world_size:
        raise CannotRun(bad + f"rank {rank} is not a rank of the job (world size {world_size})")
    if size not in SIZES:
        raise CannotRun(bad + f"{size} bytes is not a size of the check (8 to 8388608, doubling)")
    op = parts[3] if len(parts) == 4 else None
    if op is not None and op not in OPS:
        raise CannotRun(bad + f"op {op!r} is not one of {', '.join(OPS)}")
    return parts[0], rank, size, op


def parse_timeout_seconds(text: Optional[str]) -> float:
    """HETRUN_COLLECTIVE_CHECK_TIMEOUT as hetrun writes it for the probes ("65000ms")."""
    if not text:
        return 60.0
    try:
        return float(text[:-2]) / 1000.0 if text.endswith("ms") else float(text)
    except ValueError:
        raise CannotRun(f"HETRUN_COLLECTIVE_CHECK_TIMEOUT={text!r} is not a duration") from None


def write_private(path: str, text: str) -> None:
    """Writes `text` to `path` atomically: a private temporary file (0600, never following a
    link), then rename over the old one."""
    tmp = f"{path}.tmp.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        data = text.encode()
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
    os.replace(tmp, path)


class Probe:
    """One rank of the check."""

    def __init__(self) -> None:
        self.rank = _int_env("RANK")
        self.world = _int_env("WORLD_SIZE")
        self.local_rank = _int_env("LOCAL_RANK", 0)
        self.node = _int_env("GROUP_RANK", 0)
        self.nnodes = _int_env("GROUP_WORLD_SIZE", 1)
        self.family = os.environ.get("HETRUN_GPU_FAMILY") or "unknown"
        self.dir = os.environ.get("HETRUN_RUN_DIR") or ""
        if not self.dir or not os.path.isdir(self.dir):
            raise CannotRun(f"HETRUN_RUN_DIR={self.dir!r} is not a folder")
        self.fault = parse_fault(os.environ.get("HETRUN_COLLECTIVE_CHECK_FAULT"), self.world)
        self.timeout = parse_timeout_seconds(os.environ.get("HETRUN_COLLECTIVE_CHECK_TIMEOUT"))
        self.key = os.environ.get("HETRUN_COLLECTIVE_CHECK_KEY") or ""
        self.stages = self._stages()

    def _stages(self) -> List[List[int]]:
        """The ranks of each pipeline stage from HETRUN_PLAN's layout; [] without one."""
        path = os.environ.get("HETRUN_PLAN")
        if not path:
            return []
        from hetrun import _core

        try:
            layout = _core.pipeline.load_job_layout(path)
        except ValueError as e:
            raise CannotRun(f"HETRUN_PLAN: {e}") from None
        return [list(stage.ranks) for stage in layout.stages]

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def progress(self, what: str) -> None:
        write_private(self.path(f"progress_rank_{self.rank}"), what + "\n")

    def result(self, record: Dict) -> None:
        base = {"rank": self.rank, "node": self.node, "family": self.family,
                "world_size": self.world}
        base.update(record)
        write_private(self.path(f"rank_{self.rank}.json"), json.dumps(base, indent=1) + "\n")


def _interfaces() -> List[str]:
    return [name for _, name in socket.if_nameindex()]


def socket_ifname_fault(variable: str, text: Optional[str], names: List[str]) -> Optional[str]:
    """Why `variable`=`text` (GLOO_SOCKET_IFNAME: exact names, every one used; NCCL_SOCKET_IFNAME:
    prefixes, `=` for exact names, `^` to exclude) can never work on a node with the interfaces
    `names`; None when it can, or is unset."""
    if not text:
        return None
    here = f"this node has {', '.join(names) or 'none'}"
    if variable == "GLOO_SOCKET_IFNAME":
        missing = [n for n in text.split(",") if n and n not in names]
        return f"{variable}={text!r} names {', '.join(missing)}, not a network interface of " \
               f"this node ({here})" if missing else None
    exclude = text.startswith("^")
    body = text[1:] if exclude else text
    exact = body.startswith("=")
    wanted = [w for w in (body[1:] if exact else body).split(",") if w]

    def named(n: str) -> bool:
        return any(n == w if exact else n.startswith(w) for w in wanted)

    if any(named(n) != exclude for n in names):
        return None
    what = "excludes every" if exclude else "matches no"
    return f"{variable}={text!r} {what} network interface of this node ({here})"


def _check_backend(backend: str) -> None:
    """The faults this node proves alone: a backend this torch lacks, a socket interface
    variable of the backend naming no interface here (CannotRun: exit 78)."""
    import torch.distributed as dist

    if not dist.is_backend_available(backend):
        raise CannotRun(f"torch {__import__('torch').__version__} has no {backend} backend")
    variable = "NCCL_SOCKET_IFNAME" if backend == "nccl" else "GLOO_SOCKET_IFNAME"
    fault = socket_ifname_fault(variable, os.environ.get(variable), _interfaces())
    if fault:
        raise CannotRun(f"the {backend} backend cannot start: {fault}")


def _connect(probe: Probe):
    """The job-wide group: the store hetrun hosts (or rank 0's, without one) under our prefix."""
    import torch
    import torch.distributed as dist

    timeout = datetime.timedelta(seconds=max(2 * probe.timeout, 30.0))
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    _check_backend(backend)
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "False") == "True"
    store = dist.TCPStore(os.environ.get("MASTER_ADDR", "127.0.0.1"), _int_env("MASTER_PORT"),
                          probe.world, is_master=not agent and probe.rank == 0, timeout=timeout,
                          wait_for_workers=False)
    store = dist.PrefixStore(key_prefix(probe.key), store)
    if backend == "nccl":
        if probe.local_rank >= torch.cuda.device_count():
            raise CannotRun(f"local rank {probe.local_rank} has no GPU "
                            f"({torch.cuda.device_count()} visible)")
        torch.cuda.set_device(probe.local_rank)
        device = torch.device("cuda", probe.local_rank)
    else:
        device = torch.device("cpu")
    dist.init_process_group(backend, store=store, rank=probe.rank, world_size=probe.world,
                            timeout=timeout)
    return store, backend, device


def _pattern(rank: int, n: int, device):
    """Rank `rank`'s values: small integers in float32, different per rank and per element."""
    import torch

    i = torch.arange(n, dtype=torch.int64, device=device)
    return ((i * 31 + rank * 17) % 251 + 1).to(torch.float32)


def _sum_of_patterns(world: int, n: int, device):
    import torch

    total = torch.zeros(n, dtype=torch.int64, device=device)
    i = torch.arange(n, dtype=torch.int64, device=device)
    for r in range(world):
        total += (i * 31 + r * 17) % 251 + 1
    return total.to(torch.float32)


def _first_difference(got, want) -> Optional[Dict]:
    """None when `got` equals `want` bit for bit; else the first differing element."""
    import torch

    a, b = got.contiguous().view(torch.int32), want.contiguous().view(torch.int32)
    if torch.equal(a, b):
        return None
    bad = (a != b).nonzero().flatten()
    i = int(bad[0])
    return {"element": i, "expected": float(want[i]), "got": float(got[i]),
            "wrong_elements": int(bad.numel())}


def _faulted(probe: Probe, kind: str, op: str, size: int) -> bool:
    f = probe.fault
    return (f is not None and f[0] == kind and f[1] == probe.rank and f[2] == size
            and (f[3] is None or f[3] == op))


def _check_one(probe: Probe, op: str, size: int, device) -> Optional[Dict]:
    import torch.distributed as dist

    n = size // 4
    mine = _pattern(probe.rank, n, device)
    if _faulted(probe, "stall", op, size):
        while True:  # the test hook: never reach the collective (hetrun's deadline ends it)
            time.sleep(3600)
    if op == "all_reduce":
        got = mine.clone()
        dist.all_reduce(got)
        if _faulted(probe, "wrong", op, size):
            got[n // 2] += 1
        difference = _first_difference(got, _sum_of_patterns(probe.world, n, device))
    else:
        parts = [mine.new_empty(n) for _ in range(probe.world)]
        dist.all_gather(parts, mine)
        if _faulted(probe, "wrong", op, size):
            parts[-1][n // 2] += 1
        difference = None
        for r, part in enumerate(parts):
            difference = _first_difference(part, _pattern(r, n, device))
            if difference is not None:
                difference["from_rank"] = r
                break
    if difference is None:
        return None
    difference.update({"op": op, "bytes": size, "rank": probe.rank, "node": probe.node,
                       "family": probe.family})
    return difference


def check_values(probe: Probe, device) -> List[Dict]:
    """Every op at every size; this rank's wrong results (the first differing element each)."""
    found = []
    for op in OPS:
        for size in SIZES:
            probe.progress(f"{op} {size}")
            wrong = _check_one(probe, op, size, device)
            if wrong is not None:
                found.append(wrong)
    probe.progress("done")
    return found


def key_prefix(key: str) -> str:
    """The store prefix of the check: PREFIX, plus 16 hex digits only the key's holders know."""
    if not key:
        return PREFIX
    digest = hmac.new(key.encode(), b"hetrun collective check prefix", hashlib.sha256)
    return f"{PREFIX}/{digest.hexdigest()[:16]}"


def _mac(key: str, name: str, payload: str) -> str:
    message = f"hetrun collective check v1\n{len(name)}:{name}{payload}"
    return hmac.new(key.encode(), message.encode(), hashlib.sha256).hexdigest()


def seal(key: str, name: str, payload: str) -> str:
    """The record to store at `name`: the payload, plus its MAC with a key."""
    return payload + _MAC_TAG + _mac(key, name, payload) if key else payload


def unseal(key: str, name: str, record: str) -> Optional[str]:
    """The payload of `record` read at `name`; None when, with a key, its MAC does not verify."""
    if not key:
        return record
    at = record.rfind(_MAC_TAG)
    if at < 0:
        return None
    payload = record[:at]
    return payload if hmac.compare_digest(record[at + len(_MAC_TAG):], _mac(key, name, payload)) \
        else None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def valid_entry(w, rank: int, world: int) -> bool:
    """Whether `w` is a wrong value as rank `rank`'s probe writes it (every field, every type)."""
    return (isinstance(w, dict) and w.get("op") in OPS and _is_int(w.get("bytes"))
            and w["bytes"] in SIZES and _is_int(w.get("rank")) and w["rank"] == rank
            and _is_int(w.get("node")) and isinstance(w.get("family"), str)
            and len(w["family"]) <= 64 and _is_int(w.get("element"))
            and _is_int(w.get("wrong_elements"))
            and all(isinstance(w.get(k), (int, float)) and not isinstance(w.get(k), bool)
                    for k in ("expected", "got"))
            and ("from_rank" not in w or (_is_int(w["from_rank"]) and 0 <= w["from_rank"] < world)))


def publish(store, probe: Probe, mine: List[Dict]) -> None:
    """This rank's wrong results, sealed, at result/<rank> (the forge hook: an unsealed record
    claiming a wrong value instead, as another store client could write)."""
    name = f"result/{probe.rank}"
    f = probe.fault
    if f is not None and f[0] == "forge" and f[1] == probe.rank:
        forged = [{"op": f[3] or OPS[0], "bytes": f[2], "rank": probe.rank, "node": probe.node,
                   "family": probe.family, "element": 0, "expected": 1.0, "got": 2.0,
                   "wrong_elements": 1}]
        store.set(name, json.dumps(forged))
        return
    store.set(name, seal(probe.key, name, json.dumps(mine)))


def collect(store, probe: Probe) -> List[Dict]:
    """Every rank's authentic, well-formed wrong results (waits for every rank's record)."""
    found = []
    for r in range(probe.world):
        name = f"result/{r}"
        payload = unseal(probe.key, name, store.get(name).decode("utf-8", "replace"))
        try:
            entries = json.loads(payload) if payload is not None else None
        except ValueError:
            entries = None
        if not isinstance(entries, list):
            print(f"hetrun collective check: rank {probe.rank}: ignored the record at {name}: "
                  + ("it fails verification (not written by a probe of this job)"
                     if payload is None else "not a list of results"), file=sys.stderr)
            continue
        good = [w for w in entries[:len(OPS) * len(SIZES)] if valid_entry(w, r, probe.world)]
        if len(good) != len(entries):
            print(f"hetrun collective check: rank {probe.rank}: ignored {len(entries) - len(good)} "
                  f"malformed entr(ies) of the record at {name}", file=sys.stderr)
        found.extend(good)
    return sorted(found, key=lambda w: (w["rank"], OPS.index(w["op"]), w["bytes"]))


def exchange(store, probe: Probe, mine: List[Dict]) -> List[Dict]:
    """Every rank's wrong results, shared through the store (not the collective under test)."""
    publish(store, probe, mine)
    return collect(store, probe)


def summarise(wrong: List[Dict]) -> Dict:
    """The result's wrong values: the first WRONG_KEPT in full, their count, every op's sizes and
    every rank, so that the result grows with the job by one short entry a rank."""
    ranks: Dict[int, Dict] = {}
    for w in wrong:
        ranks.setdefault(w["rank"], {"rank": w["rank"], "family": w["family"], "node": w["node"]})
    return {"wrong": wrong[:WRONG_KEPT], "wrong_total": len(wrong),
            "wrong_sizes": {op: sorted({w["bytes"] for w in wrong if w["op"] == op})
                            for op in OPS if any(w["op"] == op for w in wrong)},
            "wrong_ranks": [ranks[r] for r in sorted(ranks)]}


def _median_seconds(fn, device) -> float:
    import torch

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    fn()
    times = []
    for _ in range(BANDWIDTH_ITERATIONS):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _all_reduce_seconds(device, group=None) -> float:
    import torch
    import torch.distributed as dist

    t = torch.ones(BANDWIDTH_BYTES // 4, dtype=torch.float32, device=device)
    return _median_seconds(lambda: dist.all_reduce(t, group=group), device)


def _p2p_seconds(probe: Probe, src: int, dst: int, device) -> float:
    import torch
    import torch.distributed as dist

    t = torch.ones(BANDWIDTH_BYTES // 4, dtype=torch.float32, device=device)
    if probe.rank == src:
        return _median_seconds(lambda: dist.send(t, dst), device)
    return _median_seconds(lambda: dist.recv(t, src), device)


def measure_bandwidth(probe: Probe, device) -> Dict:
    """Seconds per operation, the slowest rank's (all-reduce MAX), turned into GB/s: bus bandwidth
    for all-reduces (bytes x 2(n-1)/n / t), bytes / t for point-to-point."""
    import torch
    import torch.distributed as dist

    stages = probe.stages
    boundaries = max(len(stages) - 1, 0)
    seconds = torch.zeros(1 + len(stages) + boundaries, dtype=torch.float64, device=device)
    probe.progress("bandwidth all_reduce job")
    if probe.world > 1:
        seconds[0] = _all_reduce_seconds(device)
    for s, ranks in enumerate(stages):
        group = dist.new_group(ranks) if len(ranks) > 1 else None
        dist.barrier()
        if group is not None and probe.rank in ranks:
            probe.progress(f"bandwidth all_reduce stage {s}")
            seconds[1 + s] = _all_reduce_seconds(device, group)
    for b in range(boundaries):
        dist.barrier()
        src, dst = stages[b][0], stages[b + 1][0]
        if probe.rank in (src, dst):
            probe.progress(f"bandwidth p2p stage {b} -> {b + 1}")
            seconds[1 + len(stages) + b] = _p2p_seconds(probe, src, dst, device)
    dist.all_reduce(seconds, op=dist.ReduceOp.MAX)
    seconds = seconds.cpu().tolist()

    def bus(t: float, n: int) -> Optional[float]:
        return BANDWIDTH_BYTES * 2 * (n - 1) / n / t / 1e9 if n > 1 and t > 0 else None

    return {
        "bytes": BANDWIDTH_BYTES, "iterations": BANDWIDTH_ITERATIONS,
        "job_all_reduce_gb_per_s": bus(seconds[0], probe.world),
        "stages": [{"stage": s, "ranks": ranks, "all_reduce_gb_per_s": bus(seconds[1 + s], len(ranks))}
                   for s, ranks in enumerate(stages)],
        "boundaries": [{"from_stage": b, "to_stage": b + 1, "from_rank": stages[b][0],
                        "to_rank": stages[b + 1][0],
                        "p2p_gb_per_s": BANDWIDTH_BYTES / seconds[1 + len(stages) + b] / 1e9}
                       for b in range(boundaries)],
    }


def fragment(probe: Probe, bandwidth: Dict) -> Dict:
    """The cluster-file fragment `hetrun plan --links` reads (docs/reference/cli/plan.md): per
    stage its `network` (the slowest adjacent boundary's point-to-point GB/s) and `nvlink` (its
    group's all-reduce bus GB/s, groups of 2 or more); without a layout the job-wide all-reduce
    as the default link (`network` across nodes, `nvlink` on one)."""
    out: Dict = {"measured_by": "hetrun run --check-collectives",
                 "world_size": probe.world, "nodes": probe.nnodes}
    if not bandwidth["stages"]:
        job = bandwidth["job_all_reduce_gb_per_s"]
        if job is not None:
            out["network" if probe.nnodes > 1 else "nvlink"] = round(job, 4)
        return out
    p2p = [b["p2p_gb_per_s"] for b in bandwidth["boundaries"]]
    stages = []
    for s, stage in enumerate(bandwidth["stages"]):
        entry: Dict = {"stage": s}
        near = [p2p[b] for b in (s - 1, s) if 0 <= b < len(p2p)]
        if near:
            entry["network"] = round(min(near), 4)
        if stage["all_reduce_gb_per_s"] is not None:
            entry["nvlink"] = round(stage["all_reduce_gb_per_s"], 4)
        stages.append(entry)
    out["stages"] = stages
    return out


def run(probe: Probe) -> int:
    import torch.distributed as dist

    started = time.monotonic()
    probe.progress("init_process_group")
    backend, current = "unknown", "init_process_group"
    try:
        store, backend, device = _connect(probe)
        current = "the checks"
        wrong = exchange(store, probe, check_values(probe, device))
        record = {"backend": backend, "sizes": [SIZES[0], SIZES[-1]], "ops": list(OPS),
                  **summarise(wrong)}
        if not wrong:
            current = "the bandwidth measurements"
            bandwidth = measure_bandwidth(probe, device)
            record.update(bandwidth=bandwidth, fragment=fragment(probe, bandwidth))
    except CannotRun:
        raise
    except Exception as e:  # a collective or the store raised: report where, exit 75
        where = _read(probe.path(f"progress_rank_{probe.rank}")).strip() or current
        probe.result({"backend": backend, "error": f"{where}: {type(e).__name__}: {e}"[:600]})
        print(f"hetrun collective check: rank {probe.rank}: {where}: {e}", file=sys.stderr)
        return EXIT_COLLECTIVE_ERROR
    record["elapsed_s"] = round(time.monotonic() - started, 3)
    probe.result(record)
    probe.progress("done")
    dist.destroy_process_group()
    return 0


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def main() -> int:
    try:
        probe = Probe()
        import torch  # noqa: F401  (the image's torch: a missing one is exit 78)
        import torch.distributed  # noqa: F401
    except (CannotRun, ImportError) as e:
        print(f"hetrun collective check cannot run: {e}", file=sys.stderr)
        return EXIT_CANNOT_RUN
    try:
        return run(probe)
    except CannotRun as e:
        print(f"hetrun collective check cannot run: {e}", file=sys.stderr)
        probe.result({"cannot_run": str(e)[:600]})
        return EXIT_CANNOT_RUN


if __name__ == "__main__":
    code = main()
    # A one-shot process: skip the interpreter's teardown, where torch's store and Gloo threads
    # can abort ("terminate called without an active exception") after the verdict is written.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
