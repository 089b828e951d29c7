"""Moving pipeline layers between stages from Python: the counterpart of the C++ runtime's
hetrun/layer_mover.h and hetrun/adam_state.h (docs/how-to/python-pipelines.md).

    import hetrun.layer_moves as lm
    report = lm.move_layers(old_layout, new_layout, rank,
                            export_layer=lambda layer: lm.export_adam_layer(opt, params_of(layer)),
                            import_layer=lambda layer, tensors: install(layer, tensors))

Every layer whose stage changes between the two layouts travels from its old stage to every
replica of its new stage, replica j receiving from old replica j mod D_old (the C++ rule), over
torch.distributed point-to-point operations. Every rank walks the same transfers in the same
order (layer, then receiving replica), so blocking sends and receives cannot deadlock: the first
unfinished transfer of the job always has both its ranks at it. Each transfer carries a header
(count, dtypes, shapes) before the tensors, so the receiver needs no template.

This module imports torch; `import hetrun` and hetrun.pipeline do not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

import torch
import torch.distributed as dist

from hetrun.pipeline import layer_moves

# Dtype codes of the transfer header (both sides use this table).
_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64,
           torch.int32, torch.int8, torch.uint8, torch.bool]


@dataclass
class MoveReport:
    """What one rank did in a move."""

    layers: List[int] = field(default_factory=list)  # layers whose stage changed (every rank)
    bytes_sent: int = 0
    bytes_received: int = 0
    transfers: int = 0  # transfers this rank took part in
    seconds: float = 0.0


def _header(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    values = [len(tensors)]
    for t in tensors:
        if t.dtype not in _DTYPES:
            raise ValueError(f"hetrun.layer_moves: cannot send a tensor of dtype {t.dtype}")
        values += [_DTYPES.index(t.dtype), t.dim(), *t.shape]
    return torch.tensor(values, dtype=torch.int64)


def _send(tensors: Sequence[torch.Tensor], dst: int, group) -> int:
    header = _header(tensors)
    dist.send(torch.tensor([header.numel()], dtype=torch.int64), dst, group=group)
    dist.send(header, dst, group=group)
    sent = 0
    for t in tensors:
        t = t.detach().contiguous()
        dist.send(t, dst, group=group)
        sent += t.numel() * t.element_size()
    return sent


def _receive(src: int, group, device) -> List[torch.Tensor]:
    length = torch.empty(1, dtype=torch.int64)
    dist.recv(length, src, group=group)
    header = torch.empty(int(length.item()), dtype=torch.int64)
    dist.recv(header, src, group=group)
    values, at, out = header.tolist(), 1, []
    for _ in range(values[0]):
        dtype, ndim = _DTYPES[values[at]], values[at + 1]
        shape = values[at + 2:at + 2 + ndim]
        at += 2 + ndim
        t = torch.empty(shape, dtype=dtype, device=device)
        dist.recv(t, src, group=group)
        out.append(t)
    return out


def move_layers(old_layout, new_layout, rank: int,
                export_layer: Callable[[int], Sequence[torch.Tensor]],
                import_layer: Callable[[int, List[torch.Tensor]], None],
                group=None, device: Optional[torch.device] = None) -> MoveReport:
    """Carries out the move from old_layout to new_layout on this rank (call it on every rank).

    export_layer(layer) -> the tensors of a layer this rank sends (called once per layer, on the
    old replicas that send it: replica j mod D_old for every new replica j);
    import_layer(layer, tensors) installs a layer this rank receives. Afterwards every rank keeps
    only new_layout's layer range of its stage (an old replica that sent nothing drops its copy
    too). Ranks are global ranks (or the group's, when group is given). ValueError when the
    layouts differ in layers or stages.
    """
    if old_layout.num_layers != new_layout.num_layers or \
            len(old_layout.stages) != len(new_layout.stages):
        raise ValueError("hetrun.layer_moves: the layouts differ in layers or stages "
                         f"({old_layout.num_layers}/{len(old_layout.stages)} vs "
                         f"{new_layout.num_layers}/{len(new_layout.stages)})")
    start, report = time.monotonic(), MoveReport()
    exported: Dict[int, Sequence[torch.Tensor]] = {}
    for layer, src, dst in layer_moves(old_layout.counts, new_layout.counts):
        report.layers.append(layer)
        senders, receivers = old_layout.stages[src].ranks, new_layout.stages[dst].ranks
        for j, receiver in enumerate(receivers):
            sender = senders[j % len(senders)]
            if rank == sender:
                if layer not in exported:
                    exported[layer] = list(export_layer(layer))
                report.bytes_sent += _send(exported[layer], receiver, group)
                report.transfers += 1
            elif rank == receiver:
                tensors = _receive(sender, group, device)
                report.bytes_received += sum(t.numel() * t.element_size() for t in tensors)
                report.transfers += 1
                import_layer(layer, tensors)
    report.seconds = time.monotonic() - start
    return report


def export_adam_layer(optimizer: torch.optim.Optimizer,
                      params: Sequence[torch.Tensor]) -> List[torch.Tensor]:
    """A layer's parameters with their torch.optim.Adam/AdamW state: per parameter its value,
    exp_avg, exp_avg_sq, max_exp_avg_sq (amsgrad; zeros otherwise) and step (float64 [1]; 0 when
    the optimizer has not stepped it yet)."""
    out: List[torch.Tensor] = []
    for p in params:
        state = optimizer.state.get(p, {})
        zeros = torch.zeros_like(p)
        step = state.get("step", 0)
        step = step.detach().to("cpu", torch.float64).reshape(1) if torch.is_tensor(step) \
            else torch.tensor([float(step)], dtype=torch.float64)
        out += [p.detach(), state.get("exp_avg", zeros), state.get("exp_avg_sq", zeros),
                state.get("max_exp_avg_sq", zeros), step.to(p.device)]
    return out


def import_adam_layer(params: Sequence[torch.Tensor], tensors: Sequence[torch.Tensor],
                      amsgrad: bool = False) -> Dict[torch.Tensor, dict]:
    """Copies the values export_adam_layer sent into `params` and returns {param: state} for the
    new optimizer's state (parameters that had not been stepped get none). ValueError when the
    tensors do not match the parameters."""
    if len(tensors) != 5 * len(params):
        raise ValueError(f"hetrun.layer_moves: {len(tensors)} tensors for {len(params)} "
                         "parameters (5 per parameter expected)")
    states: Dict[torch.Tensor, dict] = {}
    for i, p in enumerate(params):
        value, exp_avg, exp_avg_sq, max_sq, step = tensors[5 * i:5 * i + 5]
        if value.shape != p.shape:
            raise ValueError(f"hetrun.layer_moves: parameter {i} has shape {tuple(p.shape)}, "
                             f"received {tuple(value.shape)}")
        with torch.no_grad():
            p.copy_(value)
        steps = float(step.reshape(()).item())
        if steps == 0:
            continue
        scalar = torch.get_default_dtype()
        # Copies: the tensors may be another optimizer's own state (an in-process hand-over).
        state = {"step": torch.tensor(steps, dtype=scalar),
                 "exp_avg": exp_avg.to(p.device, copy=True),
                 "exp_avg_sq": exp_avg_sq.to(p.device, copy=True)}
        if amsgrad:
            state["max_exp_avg_sq"] = max_sq.to(p.device, copy=True)
        states[p] = state
    return states
