"""FSDP2 (torch.distributed.fsdp.fully_shard) under hetrun.Tuner (docs/ARCHITECTURE.md §5.8).

The tuner's group is the data-parallel group FSDP reduces over: the mesh of the root's sharded
parameters (1-D: its process group; HSDP's 2-D replicate x shard mesh: all its ranks). What is
timed is every FSDP unit's own compute: four public module hooks per unit bracket FSDP's
pre-forward (all-gather and its wait) and post-forward hooks, and tensor hooks registered around
FSDP's bracket its pre-backward (the backward all-gather) and post-backward (the reduce-scatter)
hooks; the clock runs only between them. Private torch APIs this relies on, each tested in
tests/python/fsdp (torch 2.11):
  - Variable._execution_engine.queue_callback: closes the last interval before FSDP's final
    backward callback (which reduce-scatters units whose inputs need no gradient and waits for
    the pending reduce-scatters);
  - FSDPModule._get_fsdp_state()._is_root: whether model= is the root FSDP chose at the first
    forward; ._fsdp_param_group.gradient_divide_factor: the factor set_gradient_divide_factor
    set (FSDP2 has no getter)."""

from __future__ import annotations

from typing import List, Optional, Tuple

import torch
import torch.distributed as dist
from torch.autograd import Variable

from hetrun._timing import CpuIntervalClock, CudaIntervalClock
from hetrun.engines.base import Engine, optional_group_ranks


def _fsdp_module_class():
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # torch < 2.6 exports it from the private package only
        try:
            from torch.distributed._composable.fsdp import FSDPModule
        except ImportError:
            return None
    return FSDPModule


def is_fsdp2(model) -> bool:
    cls = _fsdp_module_class()
    return cls is not None and isinstance(model, cls)


def is_fsdp1(model) -> bool:
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel
    except ImportError:
        return False
    return isinstance(model, FullyShardedDataParallel)


def _mesh_of(root):
    """The device mesh and placements of the root's sharded parameters (all must agree)."""
    from torch.distributed.tensor import DTensor

    found = None
    for name, p in root.named_parameters():
        if not isinstance(p, DTensor):
            continue
        here = (p.device_mesh, tuple(p.placements))
        if found is None:
            found = (name,) + here
        elif here[0] != found[1]:
            raise ValueError(f"hetrun.Tuner: model= shards {found[0]} over {found[1]} but {name} "
                             f"over {here[0]}: one tuner balances one data-parallel mesh")
    if found is None:
        raise ValueError(f"hetrun.Tuner: model= ({type(root).__name__}) has no sharded "
                         f"parameters: call fully_shard on it (and its layers) first")
    return found[1], found[2]


def _data_parallel_ranks(mesh, placements) -> List[int]:
    """The ranks FSDP reduces over; ValueError for a mesh with a dimension FSDP does not reduce
    over (tensor parallel: out of scope)."""
    from torch.distributed.tensor import Replicate, Shard

    kinds = [type(p) for p in placements]
    fsdp = mesh.ndim == 1 and kinds == [Shard]
    hsdp = mesh.ndim == 2 and kinds == [Replicate, Shard]
    if not (fsdp or hsdp):
        names = mesh.mesh_dim_names or tuple(f"dim{i}" for i in range(mesh.ndim))
        shape = dict(zip(names, mesh.shape))
        raise ValueError(f"hetrun.Tuner: model= is sharded over the mesh {shape} with "
                         f"placements {list(placements)}: only FSDP (1-D, Shard) and HSDP "
                         f"(2-D, Replicate x Shard) meshes are supported; a tensor-parallel "
                         f"dimension is out of scope")
    return sorted(int(r) for r in mesh.mesh.flatten().tolist())


def _group_of(mesh, placements, group):
    ranks = _data_parallel_ranks(mesh, placements)
    if group is not None:
        given = optional_group_ranks(group)
        if given is None:
            given = list(range(dist.get_world_size(group)))
        if sorted(given) != ranks:
            raise ValueError(f"hetrun.Tuner: group= holds ranks {sorted(given)} but model= is "
                             f"sharded over the mesh of ranks {ranks}: the tuner's group must be "
                             f"the data-parallel group FSDP reduces over")
        return group
    if mesh.ndim == 1:
        return mesh.get_group(0)
    if ranks == list(range(dist.get_world_size())):
        return dist.group.WORLD
    raise ValueError(f"hetrun.Tuner: the HSDP mesh holds ranks {ranks}, not the whole world: "
                     f"pass group= (a process group of exactly these ranks)")


def _param_groups(root):
    cls = _fsdp_module_class()
    for module in root.modules():
        if isinstance(module, cls):
            group = module._get_fsdp_state()._fsdp_param_group  # private (module docstring)
            if group is not None:
                yield module, group


class FsdpEngine(Engine):
    name = "FSDP2"
    lockstep_micro_batches = True

    def __init__(self, root, group) -> None:
        mesh, placements = _mesh_of(root)
        self.root = root
        self.mesh = mesh
        self.hsdp = mesh.ndim == 2
        self.group = _group_of(mesh, placements, group)
        cls = _fsdp_module_class()
        self.units = [m for m in root.modules() if isinstance(m, cls)]
        self._clock = None
        self._queued = False
        self._handles: list = []

    # ---- checks --------------------------------------------------------------------------
    def check_divide_factor(self, reduction: str, group_size: int) -> None:
        """FSDP2 divides by the data-parallel size unless set_gradient_divide_factor(f) was
        called: reduction="mean" needs that default (or f = the group size), "sum" needs 1.0."""
        for module, group in _param_groups(self.root):
            factor = group.gradient_divide_factor
            if reduction == "mean":
                ok = factor is None or float(factor) == float(group_size)
                want = f"none set (FSDP2 divides by the group size {group_size})"
            else:  # one rank: dividing by the group size is summing
                ok = float(group_size if factor is None else factor) == 1.0
                want = "1.0 (set_gradient_divide_factor(1.0): FSDP2 sums)"
            if not ok:
                shown = "none (FSDP2 divides by the group size)" if factor is None else factor
                raise ValueError(f"hetrun.Tuner: {type(module).__name__} has gradient divide "
                                 f"factor {shown}, which does not match reduction="
                                 f"{reduction!r}: that needs {want}")

    def check_step(self, step_index: int) -> None:
        if step_index != 0:
            return
        is_root = self.root._get_fsdp_state()._is_root  # private (module docstring)
        if is_root is None:
            raise ValueError(f"hetrun.Tuner: model= ({type(self.root).__name__}) did not run "
                             f"forward in the first step(): pass the module fully_shard "
                             f"returned for the whole model and call it inside step()")
        if not is_root:
            raise ValueError(f"hetrun.Tuner: model= ({type(self.root).__name__}) is not the "
                             f"FSDP root: FSDP chose another module at the first forward (the "
                             f"outermost fully_shard module that ran); pass that one")
        self.check_divide_factor(self._reduction, self._size)

    # ---- timing --------------------------------------------------------------------------
    def setup(self, device: torch.device, slowdown: float, group_size: int,
              reduction: str) -> None:
        self._reduction, self._size = reduction, group_size
        self.check_divide_factor(reduction, group_size)
        if device.type == "cuda":
            self._clock = CudaIntervalClock(device)
        else:
            self._clock = CpuIntervalClock(slowdown)
        for unit in self.units:
            self._hook(unit)

    def _hook(self, unit: torch.nn.Module) -> None:
        # FSDP registers its forward pre-hook with prepend=True and its forward hook appended;
        # registered after fully_shard, ours with prepend=True run before FSDP's, ours appended
        # after: the four bracket FSDP's two (checked by the timeline test).
        add = self._handles.append
        add(unit.register_forward_pre_hook(self._before_pre_forward, prepend=True,
                                           with_kwargs=True))
        add(unit.register_forward_pre_hook(self._after_pre_forward, with_kwargs=True))
        add(unit.register_forward_hook(self._before_post_forward, prepend=True))
        add(unit.register_forward_hook(self._after_post_forward))

    def _before_pre_forward(self, module, args, kwargs):
        self._clock.pause()
        if torch.is_grad_enabled():
            # Gradients reach these inputs after FSDP's post-backward (its autograd function
            # sits between them and the unit): compute resumes there.
            for t in _tensors(args, kwargs):
                t.register_hook(self._resume_hook)
        return None

    def _after_pre_forward(self, module, args, kwargs):
        if torch.is_grad_enabled():
            # The inputs as FSDP passed them on: their gradients arrive just before its
            # post-backward (reduce-scatter) runs.
            for t in _tensors(args, kwargs):
                t.register_hook(self._pause_hook)
        self._clock.resume()
        return None

    def _before_post_forward(self, module, args, output):
        self._clock.pause()
        if torch.is_grad_enabled():
            # Registered before FSDP's pre-backward hook on the same outputs: runs first.
            outputs = _tensors((output,), {})
            for t in outputs:
                t.register_hook(self._pause_hook)
            module._hetrun_outputs = outputs
        return None

    def _after_post_forward(self, module, args, output):
        outputs = getattr(module, "_hetrun_outputs", None)
        if outputs is not None:
            # The original outputs (FSDP may have cast them for output_dtype): after FSDP's
            # pre-backward hook (the backward all-gather and its wait) on the same tensors.
            for t in outputs:
                t.register_hook(self._resume_hook)
            module._hetrun_outputs = None
        self._clock.resume()
        return None

    def _pause_hook(self, grad):
        self._clock.pause()
        if not self._queued:
            # Queued before FSDP's final callback (FSDP queues its own in the pre-backward hook
            # this hook precedes): the step's last interval closes before it runs.
            self._queued = True
            Variable._execution_engine.queue_callback(self._final_callback)  # private
        return None

    def _resume_hook(self, grad):
        self._clock.resume()
        return None

    def _final_callback(self) -> None:
        self._clock.pause()
        self._queued = False

    def begin_step(self, samples: int) -> None:
        self._clock.start(samples)

    def end_step(self) -> Tuple[List[Tuple[int, float]], float]:
        return self._clock.finish()

    @property
    def intervals(self) -> int:
        return self._clock.intervals


def _tensors(args, kwargs) -> list:
    """The tensors that need a gradient among a hook's arguments (tuples, lists, dicts)."""
    found, stack = [], [args, kwargs]
    while stack:
        item = stack.pop()
        if torch.is_tensor(item):
            if item.requires_grad:
                found.append(item)
        elif isinstance(item, (tuple, list)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found
