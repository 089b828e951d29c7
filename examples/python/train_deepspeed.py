#!/usr/bin/env python3
"""Heterogeneous data-parallel training of the tiny GPT with DeepSpeed ZeRO (stage 2 or 3) and
hetrun.integrations.deepspeed.ZeroBalance: examples/python/train_ddp.py's model, task and
figures, in a DeepSpeed engine loop.

    hetrun run --nproc-per-node 6 -- python examples/python/train_deepspeed.py [--stage 3] [...]

Every rank trains on its share of each global batch (ZeroBalance's dataloader), the loss scaled
so that DeepSpeed's average is the global batch's mean gradient; the tuner times each rank's
compute with the clock paused inside DeepSpeed's collectives (ZeRO-2's reduce-scatters and
ZeRO-3's all-gathers run inside forward and backward). --no-tune keeps the even split. With
--summary FILE rank 0 writes key=value figures (second-half averages, as train_ddp.py). Runs
under `hetrun run`, torchrun, mpirun or the deepspeed launcher; NCCL or Gloo.
"""

from __future__ import annotations

import argparse
import os

import torch

if not torch.cuda.is_available():  # DeepSpeed's own fallback to its CPU accelerator warns
    os.environ.setdefault("DS_ACCELERATOR", "cpu")

import deepspeed  # noqa: E402 (after its accelerator is chosen)
import torch.distributed as dist  # noqa: E402

import hetrun  # noqa: E402
from hetrun.integrations.deepspeed import ZeroBalance  # noqa: E402
from train_ddp import Figures, SyntheticCorpus, TinyGpt, leave  # noqa: E402


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stage", type=int, choices=(0, 1, 2, 3), default=2, help="ZeRO stage")
    p.add_argument("--steps", type=int, default=42)
    p.add_argument("--window", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--batch", type=int, default=192, help="global batch (samples per step)")
    p.add_argument("--micro-batch", type=int, default=32,
                   help="the largest micro-batch (a larger share runs as more micro-batches)")
    p.add_argument("--no-tune", action="store_true", help="keep the uniform split (baseline)")
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--summary", help="write key=value figures here (rank 0)")
    return p.parse_args()


def ds_config(args, world: int) -> dict:
    if args.batch % world:
        raise SystemExit(f"train_deepspeed: --batch {args.batch} is not a multiple of the "
                         f"{world} ranks (DeepSpeed's train_batch_size)")
    return {"train_batch_size": args.batch, "gradient_accumulation_steps": 1,
            "gradient_clipping": 1.0, "zero_optimization": {"stage": args.stage},
            "zero_allow_untested_optimizer": True, "steps_per_print": 10 ** 9,
            "wall_clock_breakdown": False}


def main() -> int:
    args = parse_args()
    torch.set_num_threads(1)  # many workers share few cores
    job = hetrun.init()
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(job.local_rank)
    deepspeed.init_distributed(dist_backend="nccl" if cuda else "gloo", verbose=False)
    world, leader = dist.get_world_size(), dist.get_rank() == 0
    balance = ZeroBalance(ds_config(args, world), window=args.window, warmup=args.warmup,
                          tune=not args.no_tune, max_micro_batch=args.micro_batch)
    torch.manual_seed(1234)  # identical initial weights on every rank
    model = TinyGpt(32, args.seq, args.dim, 2, args.layers)
    engine, *_ = deepspeed.initialize(model=model, config=balance.config,
                                      optimizer=torch.optim.AdamW(model.parameters(), lr=args.lr))
    tuner = balance.attach(engine)
    if leader:
        mode = "uniform shares (--no-tune)" if args.no_tune else "tuner on"
        print(f"train_deepspeed: {world} ranks ({dist.get_backend()}), DeepSpeed "
              f"{deepspeed.__version__} ZeRO-{args.stage}, batch {args.batch}, window "
              f"{args.window} after {args.warmup} warm-up steps, {mode}", flush=True)
    corpus = SyntheticCorpus(args.batch * args.steps, 32, args.seq)
    figures = Figures(args, (args.steps - args.warmup) // args.window)
    loss_acc, done = torch.zeros(()), 0
    device = engine.device
    for tokens, targets in balance.dataloader(corpus, seed=0):
        with balance.micro_step():
            losses = engine(tokens.to(device), targets.to(device))  # per sample
            balance.backward(losses.mean())
            engine.step()
            loss_acc += losses.detach().sum().cpu() / args.batch
            last = balance.last_micro
        if not last:
            continue
        done += 1
        figures.observe(tuner.report, loss_acc, 1.0, leader)
        if done == args.steps:
            break
    if args.summary and leader:
        figures.write(args.summary, tuner.shares)
    engine.destroy()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    leave(main())  # without the interpreter's finalization (train_ddp.leave)
