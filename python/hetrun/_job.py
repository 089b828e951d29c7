"""hetrun.init(): who this worker is, read exactly as the C++ runtime reads it."""

from __future__ import annotations

import dataclasses
from typing import Optional

from hetrun import _core


@dataclasses.dataclass(frozen=True)
class Job:
    """This worker's place in the job (hetrun run, torchrun, Open MPI, MPICH, or one process)."""

    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    stage: int  #: pipeline stage of this rank (HETRUN_PLAN's layout; 0 without a plan)
    stage_ranks: tuple  #: the ranks of this stage: the data-parallel group the tuner balances
    family: Optional[str]  #: HETRUN_GPU_FAMILY (ampere, hopper, ...), None when unset
    model: Optional[str]  #: HETRUN_GPU_MODEL (h100-sxm5, a100-pcie-40gb, ...), None when unset
    memory_ceiling_bytes: Optional[int]  #: HETRUN_MEMORY_CEILING_BYTES, None when unset
    emulated_slowdown: float  #: HETRUN_EMULATE_SLOWDOWN for this worker (1.0 when unset)
    source: str  #: where rank and world size came from ("RANK/WORLD_SIZE", "Open MPI", ...)
    master_addr: str
    master_port: int


def init(apply_memory_ceiling: bool = True) -> Job:
    """Reads the worker environment (ValueError names a bad variable and its value).

    On CUDA, selects the device cuda:LOCAL_RANK and caps this process's caching allocator at the
    job's memory ceiling (torch.cuda.set_per_process_memory_fraction), like the C++ runtime.
    """
    info = _core.read_job()
    job = Job(
        rank=info["rank"],
        world_size=info["world_size"],
        local_rank=info["local_rank"],
        local_world_size=info["local_world_size"],
        stage=info["stage"],
        stage_ranks=tuple(info["stage_ranks"]),
        family=info["family"],
        model=info["model"],
        memory_ceiling_bytes=info["memory_ceiling_bytes"],
        emulated_slowdown=info["emulated_slowdown"],
        source=info["source"],
        master_addr=info["master_addr"],
        master_port=info["master_port"],
    )
    _apply_cuda(job, apply_memory_ceiling)
    return job


def _apply_cuda(job: Job, apply_memory_ceiling: bool) -> None:
    import torch

    if not torch.cuda.is_available():
        return
    count = torch.cuda.device_count()
    if job.local_rank >= count:
        raise RuntimeError(
            f"local rank {job.local_rank} has no GPU: {count} visible (CUDA_VISIBLE_DEVICES)"
        )
    torch.cuda.set_device(job.local_rank)
    ceiling = job.memory_ceiling_bytes
    if ceiling is None or not apply_memory_ceiling:
        return
    total = torch.cuda.get_device_properties(job.local_rank).total_memory
    if ceiling > total:
        raise RuntimeError(
            f"HETRUN_MEMORY_CEILING_BYTES={ceiling} exceeds cuda:{job.local_rank}'s {total} bytes"
        )
    torch.cuda.set_per_process_memory_fraction(ceiling / total, job.local_rank)


_heartbeat: Optional[_core.Heartbeat] = None


def beat() -> None:
    """One heartbeat for `hetrun run --hang-timeout` (a no-op outside hang detection).

    A Tuner beats once per step by itself; call this from loops without one.
    """
    global _heartbeat
    if _heartbeat is None:
        _heartbeat = _core.Heartbeat()
    _heartbeat.beat()
