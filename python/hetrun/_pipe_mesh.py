"""The PP x DP mesh of a job layout for hetrun.pipelining (docs/how-to/python-pipelines.md):
replica j of the pipeline is rank j of every stage, the data-parallel group of a stage is its
ranks. torch.distributed.pipelining runs one rank per stage and pipeline, so every stage must have
the same number of replicas; the per-stage-slice meshes (a stage of 2 A100s feeding 1 H100) are
the C++ executor's (hetrun::PipelineExecutor)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

import torch
import torch.distributed as dist


def check_uniform(layout) -> int:
    """The replica count of every stage; ValueError when the stages differ in it."""
    counts = [len(stage.ranks) for stage in layout.stages]
    if len(set(counts)) != 1:
        raise ValueError(
            "hetrun.pipelining: the layout's stages have different replica counts "
            f"({','.join(map(str, counts))} ranks per stage): torch.distributed.pipelining runs "
            "a uniform PP x DP mesh (every stage the same number of ranks); per-stage-slice "
            "meshes run only under the C++ executor (hetrun::PipelineExecutor)")
    return counts[0]


@dataclass
class Mesh:
    """This rank's place: stage, replica, the pipeline group (one rank per stage, in stage
    order) and the stage's data-parallel group (None with one replica)."""

    stage: int
    stages: int
    replica: int
    replicas: int
    pipeline_ranks: List[int]
    pipeline_group: object
    dp_group: object


def build_mesh(layout, rank: int) -> Mesh:
    """Creates every pipeline and data-parallel group (collectively: every rank calls this with
    the same layout) and returns this rank's. ValueError for a non-uniform layout or a rank the
    layout does not place."""
    replicas = check_uniform(layout)
    world = dist.get_world_size()
    placed = sorted(r for stage in layout.stages for r in stage.ranks)
    if placed != list(range(world)):
        raise ValueError(f"hetrun.pipelining: the layout places ranks {placed}, the job has "
                         f"WORLD_SIZE={world}")
    stage = layout.stage_of(rank)
    replica = list(layout.stages[stage].ranks).index(rank)
    mine = pipeline_group = dp_group = None
    for j in range(replicas):  # the same calls in the same order on every rank
        ranks = [s.ranks[j] for s in layout.stages]
        group = dist.new_group(ranks)
        if j == replica:
            mine, pipeline_group = ranks, group
    if replicas > 1:
        for s, st in enumerate(layout.stages):
            group = dist.new_group(list(st.ranks))
            if s == stage:
                dp_group = group
    return Mesh(stage, len(layout.stages), replica, replicas, mine, pipeline_group, dp_group)


def stage_to_group_rank(mesh: Mesh) -> dict:
    """stage index -> rank in the pipeline group (new_group orders its ranks by global rank, so
    a stage of a higher global rank before a lower one maps explicitly)."""
    return {s: dist.get_group_rank(mesh.pipeline_group, r)
            for s, r in enumerate(mesh.pipeline_ranks)}


def replica_slice(batch: torch.Tensor, mesh: Mesh, micro_batches: int, what: str):
    """This replica's equal part of the global batch (dim 0); ValueError when the batch does
    not split into replicas x micro_batches equal parts."""
    size = batch.shape[0]
    parts = mesh.replicas * micro_batches
    if size % parts:
        raise ValueError(f"hetrun.pipelining: {what} has batch size {size}, which does not split "
                         f"into {mesh.replicas} replicas x {micro_batches} micro-batches")
    share = size // mesh.replicas
    return batch[mesh.replica * share:(mesh.replica + 1) * share]


def all_reduce_mean(tensors: List[torch.Tensor], mesh: Mesh) -> None:
    """Averages tensors in place over the stage's replicas (one flat all-reduce)."""
    if mesh.dp_group is None or not tensors:
        return
    flat = torch.cat([t.reshape(-1) for t in tensors])
    dist.all_reduce(flat, group=mesh.dp_group)
    flat.div_(mesh.replicas)
    at = 0
    for t in tensors:
        t.copy_(flat[at:at + t.numel()].view_as(t))
        at += t.numel()
