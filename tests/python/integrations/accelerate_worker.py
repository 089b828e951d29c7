"""One rank of the BalancedSteps tests: Accelerate's example loop with hetrun's lines, run twice
in this process (tuned and untuned, re-seeded); rank 0 writes a JSON summary like the others."""

import argparse
import json
import os
import sys
import time

import accelerate
import torch
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration
from torch.utils.data import TensorDataset

from hetrun.integrations.accelerate import BalancedSteps


def data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(960, 16, generator=g, dtype=torch.float64)
    return TensorDataset(x, x.sum(dim=1, keepdim=True).sin())


def run(args, tune):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(),
                                torch.nn.Linear(64, 1)).double()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    accelerator = Accelerator(cpu=True, gradient_accumulation_steps=args.accumulate,
                              dataloader_config=DataLoaderConfiguration(even_batches=False))
    model, optimizer = accelerator.prepare(model, optimizer)
    balance = BalancedSteps(accelerator, model, batch_size=args.batch, window=args.window,
                            tune=tune)
    loader = accelerator.prepare(balance.dataloader(data()))
    start, done = time.perf_counter(), 0
    for x, y in loader:
        with accelerator.accumulate(model), balance.step():
            loss = torch.nn.functional.mse_loss(model(x), y)
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        done += 1
        if done == args.steps * args.accumulate:
            break
    seconds = time.perf_counter() - start
    params = torch.cat([p.detach().reshape(-1) for p in accelerator.unwrap_model(model).parameters()])
    rate = balance.tuner.global_batch * args.accumulate * args.steps / seconds
    return params, [list(r.shares) for r in balance.tuner.reports], rate


class Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        return iter(data())


def check_errors():
    """The ValueErrors a user meets, by message."""
    out = {}
    model = torch.nn.Linear(16, 1).double()
    accelerator = Accelerator(cpu=True)
    try:
        BalancedSteps(accelerator, accelerator.prepare(model), batch_size=8)
        out["even_batches"] = "no error"
    except ValueError as error:
        out["even_batches"] = str(error)
    accelerator = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(even_batches=False))
    balance = BalancedSteps(accelerator, accelerator.prepare(torch.nn.Linear(16, 1).double()), 8)
    try:
        balance.dataloader(Stream())
        out["iterable"] = "no error"
    except ValueError as error:
        out["iterable"] = str(error)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--accumulate", type=int, default=1)
    p.add_argument("--window", type=int, default=3)
    p.add_argument("--out", required=True)
    p.add_argument("--only-even", action="store_true")
    args = p.parse_args()
    errors = check_errors() if args.only_even else {}
    even, even_shares, even_rate = run(args, tune=False)
    summary = {"errors": errors, "even_shares": even_shares, "even_samples_per_s": even_rate,
               "accelerate": accelerate.__version__}
    if not args.only_even:
        tuned, tuned_shares, tuned_rate = run(args, tune=True)
        summary.update(tuned_shares=tuned_shares, tuned_samples_per_s=tuned_rate,
                       max_param_diff=float((tuned - even).abs().max()))
    if int(os.environ["RANK"]) == 0:
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Gloo's teardown can abort at exit under load (torch 2.11; docs/how-to/fsdp2.md)
    os._exit(0)
