"""One rank of bench/deepspeed_compare.sh: a DeepSpeed ZeRO engine loop over Gloo on CPU.

--plain: DeepSpeed alone (a DistributedSampler's equal slices through a DataLoader, as
DeepSpeed's own deepspeed_io, and engine.backward of the mean loss); --no-tune: the same equal split under hetrun.integrations.deepspeed.ZeroBalance
(tune=False: its sampler, clock and loss factor); default: ZeroBalance tuned. Rank 0 appends
key=value figures to --summary: step_ms_median (the slowest rank's median step after warm-up),
and, under the tuner, efficiency (the second half of the windows' mean) and shares_final."""

import argparse
import os
import statistics
import sys
import time

import deepspeed
import torch
import torch.distributed as dist
from torch.utils.data import TensorDataset

from hetrun.integrations.deepspeed import ZeroBalance

WIDTH, TOKENS = 8, 256


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--stage", type=int, default=2)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--micro", type=int, default=16, help="per-rank micro-batch of the even split")
    p.add_argument("--window", type=int, default=4)
    p.add_argument("--warmup", type=int, default=4, help="steps left out of the step times")
    p.add_argument("--plain", action="store_true")
    p.add_argument("--no-tune", action="store_true")
    p.add_argument("--summary", required=True)
    return p.parse_args()


def setup(args, world):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, 256), torch.nn.Tanh(),
                                torch.nn.Linear(256, 256), torch.nn.Tanh(),
                                torch.nn.Linear(256, 1))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(args.micro * world * (args.steps + 1), TOKENS, WIDTH, generator=g)
    dataset = TensorDataset(x, x.sum(dim=-1, keepdim=True).sin())
    config = {"train_micro_batch_size_per_gpu": args.micro, "gradient_accumulation_steps": 1,
              "gradient_clipping": 0.0, "zero_optimization": {"stage": args.stage},
              "zero_allow_untested_optimizer": True, "steps_per_print": 10 ** 9}
    return model, dataset, config


def plain_steps(args, model, dataset, config):
    engine, *_ = deepspeed.initialize(model=model, config=config,
                                      optimizer=torch.optim.SGD(model.parameters(), lr=1e-3))
    # DeepSpeed's own data path (deepspeed_io): a DistributedSampler's equal slices
    sampler = torch.utils.data.DistributedSampler(dataset, shuffle=False)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.micro, sampler=sampler)
    start = time.perf_counter()
    for step, (x, y) in enumerate(loader):
        engine.backward(torch.nn.functional.mse_loss(engine(x), y))
        engine.step()
        yield time.perf_counter() - start
        start = time.perf_counter()
        if step + 1 == args.steps:
            break
    engine.destroy()


def balanced_steps(args, model, dataset, config, out):
    balance = ZeroBalance(config, window=args.window, tune=not args.no_tune)
    engine, *_ = deepspeed.initialize(model=model, config=balance.config,
                                      optimizer=torch.optim.SGD(model.parameters(), lr=1e-3))
    balance.attach(engine)
    start, done = time.perf_counter(), 0
    for x, y in balance.dataloader(dataset, shuffle=False):
        with balance.micro_step():
            balance.backward(torch.nn.functional.mse_loss(engine(x), y))
            engine.step()
            last = balance.last_micro
        if last:
            yield time.perf_counter() - start
            start, done = time.perf_counter(), done + 1
            if done == args.steps:
                break
    reports = balance.tuner.reports
    half = [r.efficiency for r in reports[len(reports) // 2:] if r.efficiency is not None]
    out.update(efficiency=sum(half) / len(half) if half else float("nan"),
               shares_final=",".join(map(str, balance.tuner.shares)),
               efficiency_windows=",".join("-" if r.efficiency is None else
                                           f"{r.efficiency:.3f}" for r in reports))
    engine.destroy()


def main():
    args = parse_args()
    torch.set_num_threads(1)
    deepspeed.init_distributed(dist_backend="gloo", verbose=False)
    world = dist.get_world_size()
    model, dataset, config = setup(args, world)
    out = {}
    steps = plain_steps(args, model, dataset, config) if args.plain else \
        balanced_steps(args, model, dataset, config, out)
    times = [t * 1000.0 for t in steps][args.warmup:]
    median = torch.tensor([statistics.median(times)])
    dist.all_reduce(median, op=dist.ReduceOp.MAX)
    if dist.get_rank() == 0:
        out["step_ms_median"] = median.item()
        out["samples_per_s"] = args.micro * world * 1000.0 / median.item()
        with open(args.summary, "a") as f:
            f.writelines(f"{k}={v}\n" for k, v in out.items())


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # Gloo's teardown can abort at exit under torch 2.11
