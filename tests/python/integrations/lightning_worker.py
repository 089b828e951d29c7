"""One rank of the HetrunBalancing tests: fits the same tiny module twice in this process, tuned
and untuned (re-seeded), and (rank 0) writes a JSON summary: the shares per window, both fits'
samples/s, and the largest parameter difference between the two."""

import argparse
import json
import os
import sys
import time

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset

from hetrun.integrations.lightning import HetrunBalancing


class Regression(L.LightningModule):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(),
                                       torch.nn.Linear(64, 1)).double()

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)  # a mean over this rank's batch

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-2)


def data():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(960, 16, generator=g, dtype=torch.float64)
    return TensorDataset(x, x.sum(dim=1, keepdim=True).sin())


def fit(args, tune):
    module = Regression()
    balancing = HetrunBalancing(tune=tune, window=args.window)
    ds = data()
    loader = DataLoader(ds, batch_sampler=balancing.batch_sampler(len(ds), batch_size=args.batch))
    trainer = L.Trainer(accelerator="cpu", strategy="ddp", devices=int(os.environ["LOCAL_WORLD_SIZE"]),
                        num_nodes=int(os.environ.get("GROUP_WORLD_SIZE", "1")),
                        max_steps=args.steps, accumulate_grad_batches=args.accumulate,
                        callbacks=[balancing], use_distributed_sampler=False, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    start = time.perf_counter()
    trainer.fit(module, loader)
    seconds = time.perf_counter() - start
    params = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
    rate = args.batch * trainer.world_size * args.accumulate * args.steps / seconds
    return params, [list(r.shares) for r in balancing.tuner.reports], rate, trainer


def check_errors():
    """The ValueError of a Trainer that would replace the callback's sampler, by message."""
    balancing = HetrunBalancing()
    ds = data()
    loader = DataLoader(ds, batch_sampler=balancing.batch_sampler(len(ds), batch_size=8))
    trainer = L.Trainer(accelerator="cpu", strategy="ddp",
                        devices=int(os.environ["LOCAL_WORLD_SIZE"]), max_steps=1,
                        callbacks=[balancing], logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False)
    try:
        trainer.fit(Regression(), loader)
        return {"distributed_sampler": "no error"}
    except ValueError as error:
        return {"distributed_sampler": str(error)}


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
    even, even_shares, even_rate, trainer = fit(args, tune=False)
    summary = {"errors": errors, "even_shares": even_shares, "even_samples_per_s": even_rate,
               "environment": type(trainer._accelerator_connector.cluster_environment).__name__,
               "lightning": L.__version__}
    if not args.only_even:
        tuned, tuned_shares, tuned_rate, _ = fit(args, tune=True)
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
