#!/usr/bin/env python3
"""Heterogeneous sharded data-parallel training of the tiny GPT with FSDP2 (fully_shard per
transformer layer, then the root) and hetrun's tuner: examples/python/train_ddp.py's model, task
and figures, sharded instead of replicated.

    hetrun run --nproc-per-node 6 -- python examples/python/train_fsdp.py [--no-tune] [...]

Every rank trains on its share of each global batch (hetrun.Tuner(model=root)); the tuner times
each FSDP unit's compute between FSDP's hooks, so the slow ranks' all-gather and reduce-scatter
waits never reach the fast ranks' figures. Gradient accumulation uses the job-wide micro-batch
count (tuner.micro_batches, set_requires_gradient_sync(False) on all but the last). --plain runs
the same loop on equal slices without the tuner (bench/fsdp_compare.sh's baseline). With
--summary FILE rank 0 writes key=value figures (second-half averages; median step time and peak
RSS for --plain and --no-tune). Runs under `hetrun run`, torchrun or mpirun; NCCL or Gloo.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import torch
import torch.distributed as dist
from torch.distributed.fsdp import fully_shard

import hetrun
from train_ddp import Figures, SyntheticCorpus, TinyGpt, batches, leave


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=42)
    p.add_argument("--window", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--batch", type=int, default=192)
    p.add_argument("--micro-batch", type=int, default=32)
    p.add_argument("--no-tune", action="store_true", help="keep the uniform split (baseline)")
    p.add_argument("--plain", action="store_true", help="no hetrun.Tuner at all: equal slices")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--summary", help="write key=value figures here (rank 0)")
    return p.parse_args()


def sharded_gpt(args, device) -> torch.nn.Module:
    torch.manual_seed(1234)  # identical initial weights on every rank
    net = TinyGpt(32, args.seq, args.dim, 2, args.layers).to(device)
    for layer in net.blocks.layers:
        fully_shard(layer)
    return fully_shard(net)


class EqualSlices:
    """--plain: the fixed equal split, with the same micro-batch count rule as the tuner."""

    def __init__(self, batch: int) -> None:
        size, rank = dist.get_world_size(), dist.get_rank()
        self.shares = [batch // size + (1 if r < batch % size else 0) for r in range(size)]
        self.offset, self.share = sum(self.shares[:rank]), self.shares[rank]

    def micro_batches(self, most: int):
        count = max(-(-s // most) for s in self.shares)
        return [self.share // count + (1 if i < self.share % count else 0) for i in range(count)]


def train_step(model, tuner, tokens, targets, args) -> torch.Tensor:
    lo, total = tuner.offset, torch.zeros(())
    sizes = tuner.micro_batches(args.micro_batch)
    for i, n in enumerate(sizes):
        model.set_requires_gradient_sync(i == len(sizes) - 1)
        losses = model(tokens[lo:lo + n], targets[lo:lo + n])
        if isinstance(tuner, hetrun.Tuner):
            loss = tuner.loss(losses)
        else:  # FSDP2 averages over the ranks: the tuner's factor group size / B
            loss = losses.sum() * dist.get_world_size() / args.batch
        loss.backward()
        total += loss.detach().cpu()
        lo += n
    return total


def write_timing(path: str, step_ms: list) -> None:
    # Median of the steps after warm-up: the slowest rank's, since every rank waits for it.
    mine = torch.tensor([statistics.median(step_ms)])
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)
    peak = torch.tensor([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss], dtype=torch.int64)
    dist.all_reduce(peak, op=dist.ReduceOp.MAX)
    if dist.get_rank() == 0:
        with open(path, "a") as f:
            f.write(f"step_ms_median={mine.item()}\npeak_rss_kib={peak.item()}\n")


def main() -> int:
    args = parse_args()
    torch.set_num_threads(1)  # many workers share few cores
    job = hetrun.init()
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", job.local_rank) if cuda else torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo")
    model = sharded_gpt(args, device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    if args.plain:
        tuner = EqualSlices(args.batch)
    else:
        tuner = hetrun.Tuner(args.batch, args.window, model=model, warmup=args.warmup,
                             tune=not (args.no_tune or args.plain))
    corpus = SyntheticCorpus(args.batch * 4, 32, args.seq)
    data = [(torch.stack([corpus[i][0] for i in range(s, s + args.batch)]),
             torch.stack([corpus[i][1] for i in range(s, s + args.batch)]))
            for s in range(0, len(corpus), args.batch)]
    leader = dist.get_rank() == 0
    if leader:
        mode = "no tuner (--plain)" if args.plain else (
            "uniform shares (--no-tune)" if args.no_tune else "tuner on")
        print(f"train_fsdp: {dist.get_world_size()} ranks ({dist.get_backend()}), batch "
              f"{args.batch}, window {args.window} after {args.warmup} warm-up steps, {mode}; "
              f"{args.layers} layers sharded + root", flush=True)
    figures = Figures(args, (args.steps - args.warmup) // args.window)
    loss_acc, step_ms = torch.zeros(()), []
    for step in range(args.steps):
        tokens, targets = (t.to(device) for t in data[step % len(data)])
        start = time.perf_counter()
        if args.plain:
            loss_acc += train_step(model, tuner, tokens, targets, args)
        else:
            with tuner.step():
                loss_acc += train_step(model, tuner, tokens, targets, args)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step >= args.warmup:
            step_ms.append((time.perf_counter() - start) * 1000.0)
        if not args.plain:
            figures.observe(tuner.report, loss_acc, tuner.group_size, leader)
    if args.summary:
        if leader and not args.plain:
            figures.write(args.summary, tuner.shares)
        write_timing(args.summary, step_ms)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    leave(main())  # without the interpreter's finalization (train_ddp.leave)
