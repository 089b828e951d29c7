"""FSDP2 worker programs for tests/python/fsdp: `python fsdp_workers.py NAME OUT_DIR [ARGS...]`,
one process per rank (conftest.run_workers, script=this file). Each writes OUT_DIR/rankR.json.
Real fully_shard over Gloo on CPU: per-layer units plus the root, or HSDP on a 2 x 2 mesh."""

from __future__ import annotations

import json
import os
import pathlib
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

import hetrun


def write(out: pathlib.Path, result: dict) -> None:
    (out / f"rank{dist.get_rank()}.json").write_text(json.dumps(result))


def mlp(width: int = 16, depth: int = 3, dtype=torch.float64) -> torch.nn.Sequential:
    torch.manual_seed(0)
    layers = [torch.nn.Linear(8, width)]
    for _ in range(depth - 1):
        layers += [torch.nn.Tanh(), torch.nn.Linear(width, width)]
    layers += [torch.nn.Tanh(), torch.nn.Linear(width, 3)]
    return torch.nn.Sequential(*layers).to(dtype)


def shard(net: torch.nn.Module, layout: str, reshard: bool):
    """Per-layer fully_shard on every Linear, then the root; HSDP on a 2 x 2 mesh."""
    if layout == "hsdp":
        mesh = init_device_mesh("cpu", (2, dist.get_world_size() // 2),
                                mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh("cpu", (dist.get_world_size(),), mesh_dim_names=("shard",))
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=mesh, reshard_after_forward=reshard)
    return fully_shard(net, mesh=mesh, reshard_after_forward=reshard)


def batches(steps: int, batch: int, width: int = 8):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(batch, width, generator=generator, dtype=torch.float64),
             torch.randint(0, 3, (batch,), generator=generator)) for _ in range(steps)]


def backward_share(model, tuner, loss_fn, x, y, sizes) -> None:
    """This rank's share of the global batch (x, y) as micro-batches of `sizes`, gradients
    reduced on the last only (FSDP2's set_requires_gradient_sync)."""
    lo = tuner.offset
    for i, m in enumerate(sizes):
        model.set_requires_gradient_sync(i == len(sizes) - 1)
        tuner.loss(loss_fn(model(x[lo:lo + m]), y[lo:lo + m])).backward()
        lo += m


def exact(out: pathlib.Path, layout: str, reshard: str, accumulate: str, reduction: str) -> None:
    """Three SGD-with-momentum steps with shares 1/2/3/10 of 16 against one process on the whole
    batches; accumulate: "none", "max" (micro_batches(3)) or "memory" (bytes_per_sample caps
    every micro-batch at 3 samples)."""
    dist.init_process_group("gloo")
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")
    data = batches(3, 16)
    reference = mlp()
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for x, y in data:
        loss_fn(reference(x), y).mean().backward()
        ref_opt.step()
        ref_opt.zero_grad()

    model = shard(mlp(), layout, reshard == "reshard")
    if reduction == "sum":  # torchtitan's setting: FSDP2 sums, the loss factor is 1 / B
        for module in model.modules():
            if hasattr(module, "set_gradient_divide_factor"):
                module.set_gradient_divide_factor(1.0)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    memory = {}
    if accumulate == "memory":
        memory = dict(bytes_per_sample=1 << 20, memory_ceiling_bytes=3 << 20)
    tuner = hetrun.Tuner(16, window=1, warmup=0, model=model, shares=[1, 2, 3, 10], tune=False,
                         reduction=reduction, **memory)
    sizes_seen = []
    for x, y in data:
        with tuner.step():
            sizes = [tuner.share] if accumulate == "none" else tuner.micro_batches(
                3 if accumulate == "max" else 16)
            sizes_seen.append(sizes)
            backward_share(model, tuner, loss_fn, x, y, sizes)
        opt.step()
        opt.zero_grad()
    diff = max((p.full_tensor() - q).abs().max().item()
               for p, q in zip(model.parameters(), reference.parameters()))
    report = tuner.report
    write(out, {"diff": diff, "shares": tuner.shares, "sizes": sizes_seen,
                "group_size": tuner.group_size, "engine": tuner.engine,
                "micro_batch_size": report.micro_batch_size,
                "micro_batch_count": report.micro_batch_count})


def timeline(out: pathlib.Path) -> None:
    """Whether the compute clock is paused inside every FSDP2 hook: FSDP's private parameter
    group methods are wrapped (this test only) to look at the clock as they run."""
    dist.init_process_group("gloo")
    model = shard(mlp(), "fsdp", True)
    tuner = hetrun.Tuner(8, model=model, tune=False)
    clock = tuner._engine._clock
    seen = {"running_inside": [], "calls": {}}

    def wrap(group, name, method):
        def wrapped(*args, **kwargs):
            seen["calls"][name] = seen["calls"].get(name, 0) + 1
            if clock._since is not None:
                seen["running_inside"].append(f"{name} begin")
            result = method(*args, **kwargs)
            if clock._since is not None:
                seen["running_inside"].append(f"{name} end")
            return result
        return wrapped

    for module in model.modules():
        if hasattr(module, "_get_fsdp_state"):
            state = module._get_fsdp_state()
            group = state._fsdp_param_group  # None for the root: its layers hold the weights
            for name in ("pre_forward", "post_forward", "pre_backward", "post_backward"):
                if group is not None:
                    setattr(group, name, wrap(group, name, getattr(group, name)))
            state._root_post_backward_final_callback = wrap(
                state, "final_callback", state._root_post_backward_final_callback)
    x, y = batches(1, 8)[0]
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")
    intervals = []
    for _ in range(2):
        with tuner.step():
            lo, n = tuner.offset, tuner.share
            tuner.loss(loss_fn(model(x[lo:lo + n]), y[lo:lo + n])).backward()
        intervals.append(tuner._engine.intervals)
    write(out, {"running_inside": seen["running_inside"], "calls": seen["calls"],
                "intervals": intervals})


def balance(out: pathlib.Path, tune: str) -> None:
    """FSDP2 under HETRUN_EMULATE_SLOWDOWN (3x on the ampere rank): shares and the last window's
    measured compute per rank."""
    job = hetrun.init()
    dist.init_process_group("gloo")
    model = shard(mlp(width=256, depth=2, dtype=torch.float32), "fsdp", True)
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    tuner = hetrun.Tuner(48, window=4, warmup=1, model=model, tune=tune == "tuned")
    x = torch.randn(48, 128, 8)  # a few ms of compute per sample on one thread: well above
    # the per-step fixed cost (hooks, kernel calls), which the slowdown stretches too
    shares_seen = []
    for _ in range(1 + 4 * 6):
        lo, n = tuner.offset, tuner.share
        with tuner.step():
            per_sample = model(x[lo:lo + n]).pow(2).mean(dim=(1, 2))
            tuner.loss(per_sample).backward()
        opt.step()
        opt.zero_grad()
        shares_seen.append(tuner.shares)
    last = tuner.report
    # The last two windows (both at the final split when it held): their mean compute per rank.
    tail = [r for r in tuner.reports[-2:] if r.shares == last.shares]
    compute = [sum(r.compute_ms[i] for r in tail) / len(tail) for i in range(tuner.group_size)]
    write(out, {"slowdown": job.emulated_slowdown, "shares": shares_seen, "final": tuner.shares,
                "compute_ms": compute, "step_ms": last.step_ms, "wait_ms": last.wait_ms,
                "efficiency": last.efficiency})


def mesh_group_mismatch(out: pathlib.Path) -> None:
    """A 1-D mesh over both ranks with group= this rank alone: ValueError naming both."""
    dist.init_process_group("gloo")
    model = shard(mlp(), "fsdp", True)
    mine, _ = dist.new_subgroups(group_size=1)
    try:
        hetrun.Tuner(8, model=model, group=mine)
        error = None
    except ValueError as e:
        error = str(e)
    write(out, {"error": error})


def divide_factors(out: pathlib.Path) -> None:
    """The ValueErrors of a divide factor that does not match reduction=, on 2 ranks."""
    dist.init_process_group("gloo")
    result = {}
    for reduction in ("mean", "sum"):
        model = shard(mlp(), "fsdp", True)
        if reduction == "mean":
            for module in model.modules():
                if hasattr(module, "set_gradient_divide_factor"):
                    module.set_gradient_divide_factor(1.0)
        try:
            hetrun.Tuner(8, model=model, reduction=reduction)
            result[reduction] = None
        except ValueError as e:
            result[reduction] = str(e)
    write(out, result)


def tensor_parallel(out: pathlib.Path) -> None:
    """fully_shard over the dp dimension of a (dp, tp) mesh after tensor parallelism."""
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)

    dist.init_process_group("gloo")
    mesh = init_device_mesh("cpu", (1, dist.get_world_size()), mesh_dim_names=("dp", "tp"))
    net = mlp(depth=1)
    parallelize_module(net, mesh["tp"], {"0": ColwiseParallel(), "2": RowwiseParallel()})
    model = fully_shard(net, mesh=mesh["dp"])
    try:
        hetrun.Tuner(8, model=model)
        error = None
    except ValueError as e:
        error = str(e)
    write(out, {"error": error})


def memory_modes(out: pathlib.Path, bytes_per_sample: str) -> None:
    """An H200 (rank 0) and an A100 (rank 1), shares 48/16 of 64, the memory cap from
    bytes_per_sample and each rank's HETRUN_MEMORY_CEILING_BYTES (the test sets them as hetrun
    run --memory-ceiling job or model does): three steps against one process on the whole
    batches, with the sizes and each step's wall time."""
    import time
    dist.init_process_group("gloo")
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")
    data = batches(3, 64)
    reference = mlp()
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in data:
        loss_fn(reference(x), y).mean().backward()
        ref_opt.step()
        ref_opt.zero_grad()
    model = shard(mlp(), "fsdp", True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tuner = hetrun.Tuner(64, window=1, warmup=0, model=model, shares=[48, 16], tune=False,
                         bytes_per_sample=int(bytes_per_sample))
    sizes_seen, step_ms = [], []
    for x, y in data:
        start = time.perf_counter()
        with tuner.step():
            sizes = tuner.micro_batches(64)
            sizes_seen.append(sizes)
            backward_share(model, tuner, loss_fn, x, y, sizes)
        opt.step()
        opt.zero_grad()
        step_ms.append(1000 * (time.perf_counter() - start))
    diff = max((p.full_tensor() - q).abs().max().item()
               for p, q in zip(model.parameters(), reference.parameters()))
    write(out, {"diff": diff, "sizes": sizes_seen, "step_ms": step_ms,
                "max_micro_batch": tuner.max_micro_batch,
                "ceiling": tuner.memory_model["ceiling"]})


if __name__ == "__main__":
    name, out, *args = sys.argv[1:]
    globals()[name](pathlib.Path(out), *args)
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    os._exit(0)
