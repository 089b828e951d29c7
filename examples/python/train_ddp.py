#!/usr/bin/env python3
"""Heterogeneous data-parallel training of a tiny GPT with DistributedDataParallel and hetrun's
tuner: the Python counterpart of examples/trainer (same model, same synthetic task).

    hetrun run --nproc-per-node 6 examples/python/train_ddp.py [--no-tune] [...]

Each rank trains on its share of every global batch (hetrun.Tuner; the DataLoader reads only the
rank's own samples through hetrun.ShareBatchSampler); gradients are exact for any split (the DDP
communication hook the tuner installs, plus tuner.loss()). Rank 0 prints one line per window and,
with --summary FILE, writes key=value figures for scripts/demo (second-half averages).
Runs under `hetrun run`, torchrun or mpirun; NCCL on GPU, Gloo on CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

import hetrun


class TinyGpt(torch.nn.Module):
    """Token + position embeddings, causal self-attention blocks, a linear head (no dropout)."""

    def __init__(self, vocab: int, seq: int, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.token = torch.nn.Embedding(vocab, dim)
        self.position = torch.nn.Embedding(seq, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim,
                                                 dropout=0.0)
        self.blocks = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(dim, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), -math.inf), 1))
        self.vocab = vocab

    def per_sample_loss(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.token(tokens) + self.position(positions).unsqueeze(0)
        x = self.blocks(x.transpose(0, 1), self.mask).transpose(0, 1)  # [seq, N, dim] inside
        losses = torch.nn.functional.cross_entropy(
            self.head(x).reshape(-1, self.vocab), targets.reshape(-1), reduction="none")
        return losses.view(targets.shape).mean(1)  # explicit: a micro-batch may have no rows

    forward = per_sample_loss


class SyntheticCorpus(torch.utils.data.Dataset):
    """Sequences of the affine recurrence t' = (5 t + 3) mod vocab from a random start, with 10%
    random tokens; sample i is the same on every rank (seeded by i)."""

    def __init__(self, size: int, vocab: int, seq: int) -> None:
        self.size, self.vocab, self.seq = size, vocab, seq

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i: int):
        rnd = random.Random(i)
        v, row = rnd.randrange(self.vocab), []
        for _ in range(self.seq + 1):
            row.append(v)
            v = rnd.randrange(self.vocab) if rnd.random() < 0.1 else (5 * v + 3) % self.vocab
        t = torch.tensor(row)
        return t[:-1], t[1:]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=82)
    p.add_argument("--window", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--batch", type=int, default=192)
    p.add_argument("--micro-batch", type=int, default=32)
    p.add_argument("--min-share", type=int, default=1)
    p.add_argument("--no-tune", action="store_true", help="keep the uniform split (baseline)")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--summary", help="write key=value figures here (rank 0)")
    return p.parse_args()


def batches(loader, steps: int):
    """The loader's batches, epoch after epoch, for `steps` steps."""
    step = 0
    while True:
        for batch in loader:
            if step == steps:
                return
            yield batch
            step += 1


class Figures:
    """Per-window lines on rank 0 and the second-half averages for --summary."""

    def __init__(self, args, windows: int) -> None:
        self.args, self.half = args, windows // 2
        self.rows, self.loss_first, self.loss_last = [], None, 0.0

    def window(self, report, loss: float, leader: bool) -> None:
        self.loss_first = loss if self.loss_first is None else self.loss_first
        self.loss_last = loss
        self.rows.append(report)
        if leader:
            eff = "-" if report.efficiency is None else f"{report.efficiency:.3f}"
            moved = f"  -> {report.shares_next}" if report.changed else ""
            print(f"window {report.window:2d}  shares {report.shares}  compute ms "
                  f"{[round(c) for c in report.compute_ms]}  {report.samples_per_s:6.1f} "
                  f"samples/s  idle {100 * report.barrier_idle:5.1f}%  efficiency {eff}  "
                  f"loss {loss:.3f}  tuner {100 * report.tuner_overhead:.3f}%{moved}",
                  flush=True)

    def observe(self, report, loss_acc: torch.Tensor, per_step: float, leader: bool) -> None:
        """After a step: a window's report, once, with the window's mean loss. loss_acc (this
        rank's loss summed over the window's steps; per_step divides the all-reduced sum into a
        step's mean) is all-reduced, one small all-reduce per window, and cleared."""
        if report is None or (self.rows and self.rows[-1] is report):
            return
        dist.all_reduce(loss_acc)
        steps = self.args.window if report.window > 1 else self.args.window + self.args.warmup
        self.window(report, loss_acc.item() / per_step / steps, leader)
        loss_acc.zero_()

    def write(self, path: str, shares) -> None:
        tail = [r for r in self.rows if r.window > self.half] or self.rows
        effs = [r.efficiency for r in tail if r.efficiency is not None]
        ideal = [r.ideal_samples_per_s for r in tail if r.ideal_samples_per_s is not None]
        later = [r.tuner_overhead for r in self.rows[1:]] or [0.0]

        def mean(xs):
            return sum(xs) / len(xs) if xs else 0.0

        def eff(report):
            return "-" if report.efficiency is None else f"{report.efficiency:.3f}"
        with open(path, "w") as f:
            f.write(f"samples_per_s={mean([r.samples_per_s for r in tail])}\n"
                    f"ideal_samples_per_s={mean(ideal)}\n"
                    f"idle_fraction={mean([r.barrier_idle for r in tail])}\n"
                    f"efficiency={mean(effs)}\nloss_first={self.loss_first}\n"
                    f"loss_last={self.loss_last}\ntuner_overhead={mean(later)}\n"
                    f"shares_final={','.join(map(str, shares))}\n"
                    f"efficiency_windows={','.join(eff(r) for r in self.rows)}\n")


def main() -> int:
    args = parse_args()
    torch.set_num_threads(1)  # many workers share few cores
    job = hetrun.init()
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", job.local_rank) if cuda else torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo")
    torch.manual_seed(1234)  # identical initial weights on every rank
    net = TinyGpt(32, args.seq, args.dim, 2, args.layers).to(device)
    model = DistributedDataParallel(net, device_ids=[job.local_rank] if cuda else None)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    tuner = hetrun.Tuner(args.batch, args.window, model=model, warmup=args.warmup,
                         min_share=args.min_share, tune=not args.no_tune)
    corpus = SyntheticCorpus(args.batch * args.steps, 32, args.seq)
    sampler = hetrun.ShareBatchSampler(len(corpus), tuner, shuffle=True, seed=0)
    loader = torch.utils.data.DataLoader(corpus, batch_sampler=sampler, num_workers=args.workers)
    leader = dist.get_rank() == 0
    if leader:
        params = sum(p.numel() for p in net.parameters())
        print(f"train_ddp: {dist.get_world_size()} ranks ({dist.get_backend()}), batch "
              f"{args.batch}, window {args.window} after {args.warmup} warm-up steps, "
              f"{'uniform shares (--no-tune)' if args.no_tune else 'tuner on'}; model {params} "
              f"parameters, seq {args.seq}", flush=True)
    figures = Figures(args, (args.steps - args.warmup) // args.window)
    loss_acc = torch.zeros((), device=device)
    for tokens, targets in batches(loader, args.steps):
        tokens, targets = tokens.to(device), targets.to(device)
        with tuner.step():
            first, sizes = 0, tuner.micro_batches(args.micro_batch)
            for i, n in enumerate(sizes):
                sync = model.no_sync() if i < len(sizes) - 1 else contextlib.nullcontext()
                with sync:
                    loss = tuner.loss(model(tokens[first:first + n], targets[first:first + n]))
                    loss.backward()
                loss_acc += loss.detach()
                first += n
        opt.step()
        opt.zero_grad(set_to_none=True)
        figures.observe(tuner.report, loss_acc, tuner.group_size, leader)
    if leader and args.summary:
        figures.write(args.summary, tuner.shares)
    dist.destroy_process_group()
    return 0


def leave(code: int) -> None:
    """Out without the interpreter's finalization: under torch 2.11 with Gloo a worker thread of
    the process group can still be freeing the last all-reduce's tensors while Python finalizes,
    and the process then aborts (SIGABRT, exit 134) after a finished run (docs/how-to/fsdp2.md,
    "Limits"). Everything is written and flushed here."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    leave(main())
