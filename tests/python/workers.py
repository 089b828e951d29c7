"""Worker programs for the pytest suite: `python workers.py NAME OUT_DIR [ARGS...]`, one process
per rank with a torchrun-style environment (conftest.run_workers). Each writes OUT_DIR/rankR.json."""

from __future__ import annotations

import contextlib
import copy
import json
import os
import pathlib
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import hetrun


def write(out: pathlib.Path, result: dict) -> None:
    (out / f"rank{dist.get_rank()}.json").write_text(json.dumps(result))


def small_net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def exact_gradients(out: pathlib.Path, mode: str) -> None:
    """One step of shares 1/2/3/10 of 16 against one process on the whole batch."""
    dist.init_process_group("gloo")
    net = small_net()
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(16, 8, generator=generator)
    y = torch.randint(0, 3, (16,), generator=generator)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="none")
    reference = copy.deepcopy(net)
    loss_fn(reference(x), y).mean().backward()

    model = net if mode == "sum" else DistributedDataParallel(net)
    tuner = hetrun.Tuner(16, model=None if mode == "sum" else model, shares=[1, 2, 3, 10],
                         tune=False, reduction="sum" if mode == "sum" else "mean")
    lo, n = tuner.offset, tuner.share
    with tuner.step():
        sizes = tuner.micro_batches(3) if mode == "micro" else [n]
        first = lo
        for i, m in enumerate(sizes):
            last = i == len(sizes) - 1
            sync = contextlib.nullcontext() if last or mode == "sum" else model.no_sync()
            with sync:
                tuner.loss(loss_fn(model(x[first:first + m]), y[first:first + m])).backward()
            first += m
    if mode == "sum":  # the user's own SUM all-reduce, after the step() block
        for p in net.parameters():
            dist.all_reduce(p.grad)
    diff = max((p.grad - q.grad).abs().max().item()
               for p, q in zip(net.parameters(), reference.parameters()))
    write(out, {"diff": diff, "shares": tuner.shares, "offset": lo, "share": n,
                "micro_batches": sizes})


def busy(samples: int, work: torch.Tensor) -> torch.Tensor:
    """Real CPU work proportional to the samples: a small matmul chain per sample."""
    x = work.expand(max(samples, 0), *work.shape).contiguous()
    for _ in range(4):
        x = torch.tanh(x @ work)
    return x


def sampler(out: pathlib.Path, steps: str) -> None:
    """DataLoader(num_workers=2) over ShareBatchSampler across window changes and epochs."""
    dist.init_process_group("gloo")
    dataset = torch.arange(200)  # a dataset of indices: sample i is i
    tuner = hetrun.Tuner(16, window=3, warmup=1, min_share=1)
    batch_sampler = hetrun.ShareBatchSampler(len(dataset), tuner, shuffle=True, seed=7)
    loader = torch.utils.data.DataLoader(dataset, batch_sampler=batch_sampler, num_workers=2,
                                         prefetch_factor=2)
    work = torch.randn(48, 48) / 8
    record, reports = [], []
    while tuner.step_index < int(steps):
        for batch in loader:
            if tuner.step_index >= int(steps):
                break
            shares = tuner.shares
            with tuner.step():
                if len(batch) != tuner.share:
                    raise RuntimeError(f"step {tuner.step_index}: {len(batch)} samples loaded, "
                                       f"share {tuner.share}")
                busy(len(batch), work)
            record.append({"step": tuner.step_index - 1, "indices": batch.tolist(),
                           "shares": shares})
            if tuner.report is not None and (not reports or
                                             reports[-1]["window"] != tuner.report.window):
                reports.append({"window": tuner.report.window, "closed_after": tuner.step_index,
                                "applies_from": tuner.report.applies_from_step,
                                "shares": tuner.report.shares,
                                "shares_next": tuner.report.shares_next})
    write(out, {"steps": record, "reports": reports, "len": len(batch_sampler)})


def convergence(out: pathlib.Path) -> None:
    """DDP under HETRUN_EMULATE_SLOWDOWN with fake GPU families: the slow ranks get less."""
    job = hetrun.init()
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(96, 96), torch.nn.Tanh(), torch.nn.Linear(96, 1))
    model = DistributedDataParallel(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    tuner = hetrun.Tuner(48, window=4, model=model, warmup=1)
    x = torch.randn(48, 64, 96)  # ~0.5 ms of compute per sample on one thread
    shares_seen = []
    for _ in range(1 + 4 * 7):
        lo, n = tuner.offset, tuner.share
        with tuner.step():
            per_sample = model(x[lo:lo + n]).pow(2).mean(dim=(1, 2))
            tuner.loss(per_sample).backward()
        opt.step()
        opt.zero_grad()
        shares_seen.append(tuner.shares)
    last = tuner.report
    write(out, {"family": job.family, "slowdown": job.emulated_slowdown,
                "shares": shares_seen, "final": tuner.shares,
                "efficiency": last.efficiency, "compute_ms": last.compute_ms})


def not_member(out: pathlib.Path) -> None:
    dist.init_process_group("gloo")
    group = dist.new_group([0])
    result = {}
    try:
        hetrun.Tuner(8, group=group)
        result["error"] = None
    except RuntimeError as e:
        result["error"] = str(e)
    write(out, result)


if __name__ == "__main__":
    name, out, *args = sys.argv[1:]
    globals()[name](pathlib.Path(out), *args)
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    os._exit(0)  # DataLoader workers and Gloo threads: no slow interpreter teardown
