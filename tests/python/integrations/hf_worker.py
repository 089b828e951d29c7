"""One rank of the HetrunTrainer tests: trains the same tiny model twice in this process, tuned
and untuned (re-seeded), on the same data, and (rank 0) writes a JSON summary: every window's
shares, both runs' samples/s, and the largest parameter difference between the two runs."""

import argparse
import json
import os
import sys
import time

import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, TrainingArguments

from hetrun.integrations.transformers import HetrunTrainer


class Regression(torch.nn.Module):
    """A model whose loss is a mean over its batch (no loss kwargs: the sample-mean path)."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))

    def forward(self, x, labels=None):
        out = self.net(x)
        loss = torch.nn.functional.mse_loss(out, labels) if labels is not None else None
        return {"loss": loss, "logits": out}


def dataset(kind, n):
    g = torch.Generator().manual_seed(1)
    if kind == "token":
        ids = torch.randint(0, 64, (n, 16), generator=g)
        return [{"input_ids": ids[i], "labels": ids[i]} for i in range(n)]
    x = torch.randn(n, 16, generator=g, dtype=torch.float64).to(DTYPE)
    y = x.sum(dim=1, keepdim=True).sin()
    return [{"x": x[i], "labels": y[i]} for i in range(n)]


DTYPE = torch.float64  # float32 under DeepSpeed (--deepspeed)


def deepspeed_config(stage):
    """The HF Trainer's DeepSpeed config: its "auto" values filled from TrainingArguments."""
    return {"train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto",
            "train_batch_size": "auto", "gradient_clipping": "auto",
            "zero_optimization": {"stage": stage}, "steps_per_print": 10 ** 9}


def model(kind):
    torch.manual_seed(0)
    if kind == "token":
        config = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                            eos_token_id=0)
        config._attn_implementation = "eager"
        return GPT2LMHeadModel(config).double()
    return Regression().to(DTYPE)


trained_steps = []


def flat_params(net):
    """The parameters as one vector (gathered on every rank when ZeRO-3 partitioned them)."""
    params = list(net.parameters())
    if any(hasattr(p, "ds_id") for p in params):
        import deepspeed

        with deepspeed.zero.GatheredParameters(params):
            return torch.cat([p.detach().reshape(-1).clone() for p in params])
    return torch.cat([p.detach().reshape(-1) for p in params])


def train(args, tune, steps=None, folder=None, save_at=None, resume=False):
    net = model(args.kind)
    saving = {"save_strategy": "steps", "save_steps": save_at} if save_at else \
        {"save_strategy": "no"}
    targs = TrainingArguments(
        output_dir=os.path.join(args.out, folder or ("tuned" if tune else "even")), use_cpu=True,
        per_device_train_batch_size=args.batch, gradient_accumulation_steps=args.accumulate,
        max_steps=steps or args.steps, learning_rate=1e-2, lr_scheduler_type="constant", seed=0,
        data_seed=0, logging_steps=5, report_to=[], disable_tqdm=True,
        dataloader_num_workers=0, ddp_backend="gloo", max_grad_norm=0.0, **saving,
        **({"deepspeed": deepspeed_config(args.deepspeed)} if args.deepspeed is not None else {}))
    trainer = HetrunTrainer(model=net, args=targs, train_dataset=dataset(args.kind, 600),
                            data_collator=transformers.default_data_collator, tune=tune,
                            window=args.window)
    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=True if resume else None)
    seconds = time.perf_counter() - start
    params = flat_params(net)
    shares = [list(r.shares) for r in trainer.tuner.reports]
    trained_steps.append(trainer.tuner.step_index)  # the steps this trainer ran itself
    return params, shares, trainer.global_batch * args.steps / seconds


def count_one_epoch(args):
    """One epoch of `--epoch-samples` samples (tune=False): the optimizer steps the Trainer took
    and the samples the ranks' micro-batches held, summed over the group."""
    seen = [0]

    def collate(features):
        seen[0] += len(features)
        return transformers.default_data_collator(features)

    targs = TrainingArguments(
        output_dir=os.path.join(args.out, "epoch"), use_cpu=True,
        per_device_train_batch_size=args.batch, gradient_accumulation_steps=args.accumulate,
        num_train_epochs=1, learning_rate=1e-2, lr_scheduler_type="constant", seed=0,
        data_seed=0, report_to=[], disable_tqdm=True, save_strategy="no",
        dataloader_num_workers=0, ddp_backend="gloo", max_grad_norm=0.0,
        dataloader_drop_last=args.drop_last)
    trainer = HetrunTrainer(model=model(args.kind), args=targs,
                            train_dataset=dataset(args.kind, args.epoch_samples),
                            data_collator=collate, tune=False, window=args.window)
    trainer.train()
    total = torch.tensor([seen[0]], dtype=torch.int64)
    torch.distributed.all_reduce(total)
    return {"epoch_steps": trainer.state.global_step, "epoch_samples": int(total.item())}


class Stream(torch.utils.data.IterableDataset):
    def __iter__(self):
        return iter(dataset("token", 64))


def check_errors(args):
    """The ValueErrors a user meets, by message (the test checks each names the bad input)."""
    out = {}
    targs = TrainingArguments(output_dir=os.path.join(args.out, "errors"), use_cpu=True,
                              per_device_train_batch_size=4, max_steps=2, report_to=[],
                              save_strategy="no", ddp_backend="gloo", disable_tqdm=True)
    for name, make in [("iterable", lambda: HetrunTrainer(model=model("token"), args=targs,
                                                          train_dataset=Stream())),
                       ("window", lambda: HetrunTrainer(model=model("token"), args=targs,
                                                        train_dataset=dataset("token", 64),
                                                        window=0))]:
        try:
            make().train()
            out[name] = "no error"
        except ValueError as error:
            out[name] = str(error)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=["token", "sample"], default="token")
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--accumulate", type=int, default=2)
    p.add_argument("--window", type=int, default=3)
    p.add_argument("--out", required=True)
    p.add_argument("--only-even", action="store_true", help="one untuned run (torchrun test)")
    p.add_argument("--resume", action="store_true", help="tuned with a checkpoint half way, resumed")
    p.add_argument("--deepspeed", type=int, default=None, help="ZeRO stage (float32)")
    p.add_argument("--epoch-samples", type=int, default=None,
                   help="only count one untuned epoch of this many samples")
    p.add_argument("--drop-last", action="store_true", help="dataloader_drop_last=True")
    p.add_argument("--exit", choices=["os-exit", "normal", "destroy"], default="os-exit",
                   help="how the process leaves: os._exit(0), a normal interpreter exit, or "
                        "destroy_process_group() first (the exit-abort bench)")
    args = p.parse_args()
    if args.epoch_samples is not None:
        counted = count_one_epoch(args)
        if int(os.environ["RANK"]) == 0:
            with open(os.path.join(args.out, "summary.json"), "w") as f:
                json.dump(counted, f)
        return args
    if args.deepspeed is not None:
        global DTYPE
        DTYPE = torch.float32
    errors = check_errors(args) if args.only_even else {}
    even, even_shares, even_rate = train(args, tune=False)
    summary = {"errors": errors, "even_shares": even_shares, "even_samples_per_s": even_rate,
               "torch": torch.__version__, "transformers": transformers.__version__}
    if args.resume:
        # Tuned to half way with a checkpoint there, then a new trainer resumed from it: the data
        # order continues and the split starts over, so the end equals the uninterrupted run.
        half = args.steps // 2
        train(args, tune=True, steps=half, folder="resumed", save_at=half)
        resumed, resumed_shares, _ = train(args, tune=True, folder="resumed", resume=True)
        summary.update(resumed_shares=resumed_shares, resumed_steps=trained_steps[-1],
                       resumed_max_param_diff=float((resumed - even).abs().max()))
    elif not args.only_even:
        tuned, tuned_shares, tuned_rate = train(args, tune=True)
        summary.update(tuned_shares=tuned_shares, tuned_samples_per_s=tuned_rate,
                       max_param_diff=float((tuned - even).abs().max()))
    if int(os.environ["RANK"]) == 0:
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(summary, f)
    return args


if __name__ == "__main__":
    parsed = main()
    sys.stdout.flush()
    sys.stderr.flush()
    if parsed.exit == "destroy" and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()
    if parsed.exit == "os-exit":
        # Gloo's teardown can abort at exit under load (torch 2.11; docs/how-to/fsdp2.md)
        os._exit(0)
