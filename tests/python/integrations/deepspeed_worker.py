"""One rank of the ZeroBalance tests (hetrun.integrations.deepspeed): real DeepSpeed engines over
Gloo on CPU, started by the tests' run_workers (conftest.py). Modes:

  exact OUT CASES...   each case STAGE:ACCUM:SPLIT:CAP:CLIP[:unmanaged] (CAP: max_micro_batch,
                       mN the memory model's ceiling of N samples, - none) trains a fresh engine 6 steps
                       with unequal shares and compares its parameters with a one-process
                       reference on the same global batches (float64, clipped alike); then
                       the ValueErrors a user meets, by message
  balance OUT STAGES.. 2 emulated H100 + 1 A100 at 3x (HETRUN_EMULATE_SLOWDOWN), tuned

Each rank writes OUT/rank<r>.json and leaves with os._exit(0) (Gloo's teardown can abort at exit
under torch 2.11)."""

import json
import os
import pathlib
import sys
import time

import deepspeed
import torch
from torch.utils.data import TensorDataset

from hetrun.integrations.deepspeed import ZeroBalance

WIDTH = 8


def data(n=96, tokens=None):
    """n samples of WIDTH features (or of `tokens` x WIDTH: more compute per sample)."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n, *([tokens] if tokens else []), WIDTH, generator=g)
    return TensorDataset(x, x.sum(dim=1, keepdim=True).sin())


def mlp(hidden=16, depth=1):
    torch.manual_seed(0)
    layers = [torch.nn.Linear(WIDTH, hidden), torch.nn.Tanh()]
    for _ in range(depth - 1):
        layers += [torch.nn.Linear(hidden, hidden), torch.nn.Tanh()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(hidden, 1))


def config(stage, accum, clip, micro, managed=True):
    return {"train_micro_batch_size_per_gpu": micro, "gradient_accumulation_steps": accum,
            "gradient_clipping": clip, "zero_optimization": {"stage": stage},
            "zero_allow_untested_optimizer": True, "steps_per_print": 10 ** 9,
            "wall_clock_breakdown": False, "managed_gradient_accumulation": managed}


def full_params(engine):
    """The trained parameters, gathered under ZeRO-3."""
    params = list(engine.module.parameters())
    if engine.zero_optimization_stage() == 3:
        with deepspeed.zero.GatheredParameters(params):
            return torch.cat([p.detach().reshape(-1).clone() for p in params])
    return torch.cat([p.detach().reshape(-1).clone() for p in params])


def train(balance, engine, steps, dataset):
    loss_fn = torch.nn.functional.mse_loss
    done, splits, counts = 0, [], []
    for x, y in balance.dataloader(dataset, seed=3):
        with balance.micro_step():
            if balance._micro == 0:
                splits.append(balance.tuner.shares)
                counts.append(len(balance._sizes))
            balance.backward(loss_fn(engine(x), y))
            last = balance.last_micro
            if balance.managed or last:  # unmanaged: the caller's step() is the boundary
                engine.step()
        done += last
        if done == steps:
            break
    return splits, counts


def reference(dataset, global_batch, steps, clip, lr):
    """One process, the whole global batch per step, float64; also how many steps clipped."""
    model = mlp().double()
    clipped = 0
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(3)).tolist()
    x, y = dataset.tensors
    for s in range(steps):
        idx = order[s * global_batch:(s + 1) * global_batch]
        loss = torch.nn.functional.mse_loss(model(x[idx].double()), y[idx].double())
        opt.zero_grad()
        loss.backward()
        if clip > 0:
            clipped += float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip)) > clip
        opt.step()
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()]), clipped


def exact_case(case, world):
    stage, accum, replan, cap, clip, *mode = case.split(":")
    stage, accum, replan, clip = int(stage), int(accum), replan == "replan", float(clip)
    managed = mode != ["unmanaged"]
    micro, steps, lr = 3, 6, 0.1
    global_batch = micro * accum * world
    dataset = data()
    uneven = [global_batch // 3] + [global_batch - global_batch // 3 - (world - 2) * (
        global_batch // 3)] + [global_batch // 3] * (world - 2)
    options = dict(window=2, warmup=0)
    if cap.startswith("m"):  # the memory model's cap (hetrun/_memory.py): ceiling / per sample
        options.update(bytes_per_sample=1000, memory_ceiling_bytes=1000 * int(cap[1:]))
    elif cap != "-":
        options.update(max_micro_batch=int(cap))
    if not replan:
        options.update(tune=False, shares=uneven)
    balance = ZeroBalance(config(stage, accum, clip, micro, managed), **options)
    model = mlp()
    engine, *_ = deepspeed.initialize(model=model, config=balance.config,
                                      optimizer=torch.optim.SGD(model.parameters(), lr=lr))
    balance.attach(engine)
    splits, micro_counts = train(balance, engine, steps, dataset)
    got = full_params(engine).double()
    want, clipped = reference(dataset, global_batch, steps, clip, lr)
    error = float(((got - want).abs() / want.abs().clamp_min(1e-3)).max())
    result = {"case": case, "max_rel_error": error, "splits": splits, "clipped_steps": clipped,
              "micro_counts": micro_counts,
              "global_samples": engine.global_samples, "steps": steps,
              "global_batch": global_batch, "replans": len({tuple(s) for s in splits}) - 1}
    engine.destroy()
    return result


def exact(out, cases):
    world = int(os.environ["WORLD_SIZE"])
    return {"cases": [exact_case(c, world) for c in cases]}


def balance_run(out, stage):
    world = int(os.environ["WORLD_SIZE"])
    micro, steps = 16, 32
    dataset = data(micro * world * steps, tokens=256)
    balance = ZeroBalance(config(int(stage), 1, 0.0, micro), window=4)
    model = mlp(hidden=256, depth=2)
    engine, *_ = deepspeed.initialize(model=model, config=balance.config,
                                      optimizer=torch.optim.SGD(model.parameters(), lr=1e-3))
    balance.attach(engine)
    start = time.perf_counter()
    train(balance, engine, steps, dataset)
    reports = balance.tuner.reports
    return {"shares": [list(r.shares) for r in reports], "final": list(balance.tuner.shares),
            "compute_ms": list(reports[-1].compute_ms), "seconds": time.perf_counter() - start,
            "engine": balance.tuner.engine}


def errors(out):
    found = {}
    try:
        ZeroBalance({"train_micro_batch_size_per_gpu": "auto"})
    except ValueError as error:
        found["auto"] = str(error)
    balance = ZeroBalance(config(2, 1, 0.0, 4))
    model = mlp()
    engine, *_ = deepspeed.initialize(model=model, config=config(2, 2, 0.0, 4),
                                      optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    try:
        balance.attach(engine)
    except ValueError as error:
        found["config"] = str(error)
    from accelerate import Accelerator
    from accelerate.utils import DeepSpeedPlugin

    from hetrun.integrations.accelerate import BalancedSteps

    accelerator = Accelerator(deepspeed_plugin=DeepSpeedPlugin(zero_stage=2))
    try:
        BalancedSteps(accelerator, mlp(), batch_size=4)
    except ValueError as error:
        found["accelerate"] = str(error)
    return found


def main():
    mode, out = sys.argv[1], pathlib.Path(sys.argv[2])
    deepspeed.init_distributed(dist_backend="gloo", verbose=False)
    if mode == "exact":  # and then the errors: one launch
        result = dict(exact(out, sys.argv[3:]), errors=errors(out))
    else:
        result = {"stages": {stage: balance_run(out, stage) for stage in sys.argv[3:]}}
    result["deepspeed"] = deepspeed.__version__
    (out / f"rank{os.environ['RANK']}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # Gloo's teardown can abort at exit under torch 2.11
