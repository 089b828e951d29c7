"""Heterogeneous pipelines on torch.distributed.pipelining (docs/how-to/python-pipelines.md).

    import hetrun, hetrun.pipelining, torch, torch.distributed as dist
    job = hetrun.init()
    dist.init_process_group("gloo")                 # or nccl
    pipe = hetrun.pipelining.Pipeline(
        layers=[Block(i) for i in range(n)],        # or a function that builds layer i
        loss_fn=lambda out, target: F.cross_entropy(out.flatten(0, 1), target.flatten()),
        optimizer=lambda params: torch.optim.AdamW(params, lr=3e-4),
        window=4)                                   # HETRUN_PLAN's layout, live re-plan on
    for step in range(steps):
        loss = pipe.step(tokens, targets)           # the global batch; the loss on the last stage

From the job layout (HETRUN_PLAN) and the model as an ordered list of layer modules, every rank
builds a PipelineStage holding exactly its stage's layers (module names the full model's:
`layers.17.weight`) and the layout's torch schedule (Schedule1F1B or ScheduleGPipe), with data
parallelism across the pipeline replicas of a uniform PP x DP mesh: each replica trains its
equal part of the global batch and each stage averages its gradients over its replicas, so
losses and parameters are a one-process run's. Each stage's forward and backward compute per
micro-batch is measured (not its waits; HETRUN_EMULATE_SLOWDOWN stretches it on CPU) into
measurements.json. At every window boundary every rank asks the same hetrun.pipeline.Rebalancer;
on a move only the moved layers travel (parameters and AdamW state, hetrun.layer_moves), the
stage and schedule are rebuilt on the new split and hetrun.pipeline.record_move records it.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Dict, List, Optional, Sequence, Union

import torch
import torch.distributed as dist
from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe

import hetrun.layer_moves as lm
import hetrun.pipeline as hp
from hetrun import _core, _restart
from hetrun._restart import ReplanRequested
from hetrun._pipe_mesh import Mesh, all_reduce_mean, build_mesh, replica_slice, \
    stage_to_group_rank
from hetrun._stage_clock import StageClock, TimedStage

__all__ = ["Pipeline", "ReplanRequested", "StageModule", "SCHEDULES"]

SCHEDULES = {"1f1b": Schedule1F1B, "gpipe": ScheduleGPipe}
_FIGURE = ("stage", "first_layer", "layers", "forward_ms", "backward_ms")


class StageModule(torch.nn.Module):
    """A stage's layers under the full model's names (`layers.<i>`), run in layer order."""

    def __init__(self, layers: Dict[int, torch.nn.Module]) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleDict({str(i): layers[i] for i in sorted(layers)})

    def forward(self, x):
        """Runs the stage's layers in layer order."""
        for layer in self.layers.values():
            x = layer(x)
        return x


class Pipeline:
    """This rank's stage of the job's pipeline and its schedule; see the module docstring.

    layers: the model as an ordered list of layer modules (the same on every rank) or a
    function layer index -> a new module of that layer (called for this stage's layers, and for
    a layer that moves here; the values it starts from are replaced by the sender's).
    loss_fn(output, target): the loss of one micro-batch (mean-reduced). optimizer(params): a
    torch.optim.Adam/AdamW over the given parameters (moves carry their state). layout: a
    hetrun.pipeline.JobLayout (default: HETRUN_PLAN's). schedule: "1f1b" or "gpipe" (default the
    layout's). window: steps per measurement window (0: no re-plan, no measurements).
    replan: "live" (default), "restart" (on a move: save a DCP checkpoint to checkpoint_dir,
    record the new split, raise ReplanRequested, a SystemExit with code 82; a restarted job
    resumes from the checkpoint on the recorded split) or "off". threshold: the Rebalancer's.
    ValueError names a layout that does not fit the model or the job, a schedule this class does
    not run, a bad batch, a checkpoint of another model."""

    def __init__(self, layers: Union[Sequence[torch.nn.Module], Callable[[int], torch.nn.Module]],
                 loss_fn: Callable, optimizer: Callable, *, layout=None,
                 schedule: Optional[str] = None, window: int = 4, replan: str = "live",
                 threshold: float = 0.05, device: Optional[torch.device] = None,
                 checkpoint_dir: Optional[str] = None) -> None:
        if replan not in ("live", "restart", "off"):
            raise ValueError(f"hetrun.pipelining: replan={replan!r}, expected 'live', "
                             "'restart' or 'off'")
        if int(window) < 0:
            raise ValueError(f"hetrun.pipelining: window={window} must be >= 0")
        self._layers, self.loss_fn, self._new_optimizer = layers, loss_fn, optimizer
        self.layout = layout if layout is not None else _layout_from_environment()
        _check_model(self.layout, layers)
        self.schedule_name = _schedule_name(schedule, self.layout)
        self.window, self.replan, self.rank = int(window), replan, dist.get_rank()
        self.device = device or _default_device()
        self.mesh: Mesh = build_mesh(self.layout, self.rank)
        self.clock = StageClock(self.device, _core.emulated_slowdown())
        self.rebalancer = hp.Rebalancer(self.layout, threshold=threshold)
        self.log = hp.MeasurementLog.from_environment(self.layout, self.rank) if self.window \
            else None
        self.steps = self._samples = 0
        self.last_loss: Optional[float] = None  # the last step's (also when step() raised)
        self.moves: List[dict] = []
        self.reasons: List[str] = []
        first, count = self._range()
        self.module = StageModule({i: self._layer(i) for i in range(first, first + count)})
        self.optimizer = self._new_optimizer(list(self.module.parameters()))
        self.checkpoint_dir = _restart.checkpoint_dir(checkpoint_dir) if replan == "restart" \
            else None
        self.resumed_at: Optional[int] = None
        if self.checkpoint_dir:
            self._resume()
        self._build_schedule()

    def _resume(self) -> None:
        """Restart mode: a complete checkpoint resumes (on this layout's split); a moved layout
        without one is refused rather than trained from scratch."""
        found = _restart.latest(self.checkpoint_dir)
        if found:
            self.steps = self.resumed_at = _restart.load(found, self.module, self.optimizer)
        elif self.layout.revision > 0:
            raise ValueError(f"hetrun.pipelining: the layout is at revision "
                             f"{self.layout.revision} (moved), but {self.checkpoint_dir} holds "
                             f"no complete checkpoint ({_restart.POINTER} naming a sub-folder "
                             "with .metadata): not starting from scratch")

    # --- the stage and its schedule -----------------------------------------------------------
    def _range(self):
        s = self.layout.stages[self.mesh.stage]
        return s.first_layer, s.layers

    def _layer(self, i: int) -> torch.nn.Module:
        module = self._layers[i] if _is_list(self._layers) else self._layers(i)
        return module.to(self.device)

    def _build_schedule(self) -> None:
        self.stage = TimedStage(self.module, self.mesh.stage, self.mesh.stages, self.device,
                                group=self.mesh.pipeline_group, clock=self.clock)
        self.stage.stage_index_to_group_rank = stage_to_group_rank(self.mesh)
        self.schedule = SCHEDULES[self.schedule_name](self.stage, self.layout.micro_batches,
                                                      loss_fn=self.loss_fn)

    @property
    def is_first(self) -> bool:
        """True on the first stage's ranks (they feed the inputs)."""
        return self.mesh.stage == 0

    @property
    def is_last(self) -> bool:
        """True on the last stage's ranks (they compute the loss; step() returns it there)."""
        return self.mesh.stage == self.mesh.stages - 1

    def named_parameters(self):
        """This stage's parameters under the full model's names (`layers.17.weight`)."""
        return self.module.named_parameters()

    # --- one step --------------------------------------------------------------------------------
    def step(self, inputs: torch.Tensor, targets: torch.Tensor) -> Optional[float]:
        """One optimizer step on the global batch (every rank passes the same; each replica
        trains its part). Returns the step's loss (the mean over the batch) on the last stage's
        ranks, None on the others."""
        micro = self.layout.micro_batches
        x = replica_slice(inputs, self.mesh, micro, "inputs").to(self.device).contiguous()
        y = replica_slice(targets, self.mesh, micro, "targets").to(self.device).contiguous()
        losses: List[torch.Tensor] = []
        self._samples += x.shape[0]
        if self.is_first and self.is_last:
            self.schedule.step(x, target=y, losses=losses)
        elif self.is_first:
            self.schedule.step(x)
        elif self.is_last:
            self.schedule.step(target=y, losses=losses)
        else:
            self.schedule.step()
        all_reduce_mean([p.grad for p in self.module.parameters() if p.grad is not None],
                        self.mesh)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.last_loss = self._step_loss(losses)
        self.steps += 1
        if self.window and self.steps % self.window == 0:
            self._window_boundary()
        return loss

    def _step_loss(self, losses: List[torch.Tensor]) -> Optional[float]:
        if not self.is_last:
            return None
        total = torch.stack([l.detach() for l in losses]).mean().reshape(1)
        all_reduce_mean([total], self.mesh)
        return float(total.item())

    # --- measurements and the live re-plan ---------------------------------------------------
    def _window_boundary(self) -> None:
        forward_ms, backward_ms = self.clock.window()
        first, count = self._range()
        window = self.steps // self.window - 1
        self.log.append(hp.WindowMeasurement(
            window=window, revision=self.layout.revision, first_layer=first, layers=count,
            samples=self._samples, micro_batches=self.layout.micro_batches,
            forward_ms=forward_ms, backward_ms=backward_ms))
        self._samples = 0
        if self.replan == "off":
            return
        mine = dict(stage=self.mesh.stage, first_layer=first, layers=count,
                    forward_ms=forward_ms, backward_ms=backward_ms)
        decision = self.rebalancer.decide(hp.stage_window(_all_gather(mine),
                                                          len(self.layout.stages)))
        self.reasons.append(decision.reason)
        if decision.move and self.replan == "restart":
            self._save_and_exit(decision)
        elif decision.move:
            self._move(decision)

    def _save_and_exit(self, decision) -> None:
        """Restart mode: checkpoint, record the new split, exit 82 (ReplanRequested)."""
        new_layout = hp.with_split(self.layout, decision.new_counts)
        _restart.save(self.checkpoint_dir, self.module, self.optimizer, self.steps)
        if os.environ.get("HETRUN_PLAN"):
            hp.record_move(new_layout)
        raise _restart.ReplanRequested(new_layout.counts)

    def _move(self, decision) -> None:
        """Carries out a decision on this rank (every rank calls it with the same decision)."""
        began = time.monotonic()
        new_layout = hp.with_split(self.layout, decision.new_counts)
        kept = {p: self.optimizer.state[p] for p in self.module.parameters()
                if p in self.optimizer.state}
        layers = {int(k): m for k, m in self.module.layers.items()}
        received: dict = {}

        def export_layer(layer):
            return lm.export_adam_layer(self.optimizer, list(layers[layer].parameters()))

        def import_layer(layer, tensors):
            layers[layer] = self._layer(layer)
            received.update(lm.import_adam_layer(list(layers[layer].parameters()), tensors))

        report = lm.move_layers(self.layout, new_layout, self.rank, export_layer, import_layer,
                                device=self.device)
        first = new_layout.stages[self.mesh.stage].first_layer
        count = new_layout.stages[self.mesh.stage].layers
        self.module = StageModule({i: layers[i] for i in range(first, first + count)})
        self.optimizer = self._new_optimizer(list(self.module.parameters()))
        for p in self.module.parameters():
            state = kept.get(p) or received.get(p)
            if state:
                self.optimizer.state[p] = state
        self.rebalancer.applied(decision)
        old_counts, self.layout = self.layout.counts, new_layout
        self._build_schedule()
        if os.environ.get("HETRUN_PLAN"):
            hp.record_move(self.layout)
        self.moves.append(dict(step=self.steps, before=list(old_counts),
                               split=list(self.layout.counts), layers=report.layers,
                               bytes_sent=report.bytes_sent, reason=decision.reason,
                               seconds=time.monotonic() - began,
                               predicted_ms=decision.predicted_new_iteration_ms,
                               predicted_before_ms=decision.predicted_current_iteration_ms,
                               measured_before_ms=decision.measured_current_iteration_ms))


def _all_gather(mine: dict) -> list:
    """Every rank's figure in one float64 tensor each: the same bits on every rank."""
    t = torch.tensor([float(mine[k]) for k in _FIGURE], dtype=torch.float64)
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return [dict(zip(_FIGURE, v.tolist())) for v in out]


def _layout_from_environment():
    path = os.environ.get("HETRUN_PLAN")
    if not path:
        raise ValueError("hetrun.pipelining: HETRUN_PLAN is not set (run under `hetrun run "
                         "--plan FILE`, or pass layout=)")
    return hp.load_job_layout(path)


def _is_list(layers) -> bool:
    return isinstance(layers, (Sequence, torch.nn.ModuleList, torch.nn.Sequential))


def _check_model(layout, layers) -> None:
    if _is_list(layers) and len(layers) != layout.num_layers:
        raise ValueError(f"hetrun.pipelining: the layout has num_layers={layout.num_layers}, "
                         f"the model {len(layers)} layers")
    if not _is_list(layers) and not callable(layers):
        raise ValueError("hetrun.pipelining: layers must be a list of modules or a function "
                         f"that builds layer i, got {type(layers).__name__}")


def _schedule_name(schedule: Optional[str], layout) -> str:
    name = (schedule or layout.schedule or "1f1b").lower()
    if name not in SCHEDULES:
        raise ValueError(f"hetrun.pipelining: schedule={name!r}: one stage per rank runs "
                         f"{', '.join(SCHEDULES)} (interleaved schedules are not supported)")
    return name


def _default_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")
