"""tests/gpu/run.sh step deepspeed: hetrun.integrations.deepspeed.ZeroBalance under DeepSpeed
ZeRO-3 on one GPU (NCCL, world size 1).

Checks what the CPU tests cannot: the CUDA-event intervals of hetrun/engines/deepspeed.py (its
clock pauses inside every collective of deepspeed.comm, where ZeRO-3 gathers parameters in
forward and backward) on a real DeepSpeed engine. Prints key=value figures; exits 1 naming the
first failed check.
  1. exact: fp32 ZeRO-3, 3 steps of a global batch 64 as micro-batches of at most 16
     (max_micro_batch: 4 per step), SGD, the parameters (gathered) against the same model in one
     plain process (float32, 1e-5 relative);
  2. waits excluded: a sleep of ~20 ms injected into every collective DeepSpeed issues (on the
     GPU a sleep kernel on the current stream, where a wait for a slower peer's all-gather
     would sit) must not reach the measured compute, while the step's wall time grows by it;
  3. bf16 ZeRO-3 ({"bf16": {"enabled": true}}): trains (loss finite and falling) with intervals
     measured.
--device cpu runs 1 and 2 over Gloo with the CPU clock (time.sleep as the wait): the suite's
check of this script (ctest gpu.deepspeed_check_cpu), so that the GPU run tests the GPU and
not the script.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

import torch

WIDTH = {"cuda": 1024, "cpu": 128}
SLEEP_MS = 20.0


def net(device: str) -> torch.nn.Sequential:
    torch.manual_seed(0)
    width, layers = WIDTH[device], []
    for _ in range(4):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, 8)).to(device)


def data(device: str, steps: int = 3, batch: int = 64):
    g = torch.Generator().manual_seed(1)
    width = WIDTH[device]
    return [(torch.randn(batch, width, generator=g).to(device),
             torch.randn(batch, 8, generator=g).to(device)) for _ in range(steps)]


def config(bf16: bool = False) -> dict:
    c = {"train_micro_batch_size_per_gpu": 64, "gradient_accumulation_steps": 1,
         "gradient_clipping": 0.0, "zero_optimization": {"stage": 3},
         "zero_allow_untested_optimizer": True, "steps_per_print": 10 ** 9,
         "wall_clock_breakdown": False}
    if bf16:
        c["bf16"] = {"enabled": True}
    return c


def engine_of(device: str, bf16: bool = False, max_micro: int = 16, window: int = 1):
    import deepspeed
    from hetrun.integrations.deepspeed import ZeroBalance

    balance = ZeroBalance(config(bf16), window=window, warmup=0, tune=False,
                          max_micro_batch=max_micro)
    model = net(device)
    engine, *_ = deepspeed.initialize(model=model, config=balance.config,
                                      optimizer=torch.optim.SGD(model.parameters(), lr=0.05))
    balance.attach(engine)
    return balance, engine


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def run(balance, engine, batches, device: str):
    """One optimizer step per global batch of `batches`, in order, through balance.dataloader
    (its micro-batches); (losses, wall ms per step)."""
    dataset = torch.utils.data.TensorDataset(torch.cat([x for x, _ in batches]),
                                             torch.cat([y for _, y in batches]))
    dtype = torch.bfloat16 if engine.bfloat16_enabled() else torch.float32
    losses, wall, total, t0 = [], [], 0.0, None
    for x, y in balance.dataloader(dataset, shuffle=False):
        if t0 is None:
            sync(device)
            t0 = time.perf_counter()
        with balance.micro_step():
            loss = (engine(x.to(dtype)).float() - y).pow(2).mean()
            balance.backward(loss)
            engine.step()
            total += float(loss.detach()) * len(x) / balance.global_batch
            last = balance.last_micro
        if last:
            sync(device)
            wall.append((time.perf_counter() - t0) * 1000)
            losses.append(total)
            total, t0 = 0.0, None
            if len(losses) == len(batches):
                break
    return losses, wall


def reference(batches, device: str):
    model = net(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for x, y in batches:
        (model(x) - y).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    return model


def max_rel(engine, ref) -> float:
    import deepspeed

    params = list(engine.module.parameters())
    worst = 0.0
    with deepspeed.zero.GatheredParameters(params):
        for p, q in zip(params, ref.parameters()):
            full = p.detach().float()
            worst = max(worst, ((full - q).abs().max() / q.abs().max().clamp_min(1e-12)).item())
    return worst


class Waits:
    """A sleep at the start of every collective of deepspeed.comm's backend while `on`
    (on the GPU a sleep kernel on the current stream, on the CPU time.sleep), installed on the
    backend instance before any ZeroBalance wraps it: the sleep then lies inside the clock's
    pause, where a wait for a slower peer would. `count` counts the sleeps."""

    def __init__(self, device: str) -> None:
        from deepspeed.comm import comm
        from hetrun.engines import deepspeed as timed

        self.on, self.count, self.device = False, 0, device
        self.cycles = 0
        if device == "cuda":
            rate_khz = torch.cuda.get_device_properties(0).clock_rate
            self.cycles = int(SLEEP_MS * 1e-3 * rate_khz * 1e3)
        backend = comm.cdb
        if getattr(backend, timed._MARK, False):
            raise RuntimeError("deepspeed.comm's backend is already timed: install Waits first")
        for name in timed.COLLECTIVES:
            method = getattr(backend, name, None)
            if method is not None:
                setattr(backend, name, self._slow(method))

    def _slow(self, method):
        def call(*args, **kwargs):
            if self.on:
                self.count += 1
                if self.device == "cuda":
                    torch.cuda._sleep(self.cycles)
                else:
                    time.sleep(SLEEP_MS / 1000)
            return method(*args, **kwargs)
        return call


def measured(balance) -> float:
    """The mean of the last two windows' measured compute (ms; window of 2 steps)."""
    seen = [r.compute_ms[0] for r in balance.tuner.reports]
    return sum(seen[-2:]) / len(seen[-2:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    device = parser.parse_args().device
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if "MASTER_PORT" not in os.environ:  # a free port: the suite runs this beside other jobs
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(s.getsockname()[1])
    for key, value in (("RANK", "0"), ("LOCAL_RANK", "0"), ("WORLD_SIZE", "1")):
        os.environ.setdefault(key, value)
    import deepspeed

    if device == "cuda":
        torch.cuda.set_device(0)
    deepspeed.init_distributed(dist_backend="nccl" if device == "cuda" else "gloo",
                               verbose=False)
    print(f"deepspeed={deepspeed.__version__}")
    waits = Waits(device)
    batches = data(device)
    ref = reference(batches, device)
    failures = []

    balance, engine = engine_of(device)
    run(balance, engine, batches, device)
    exact = max_rel(engine, ref)
    clock = type(balance.tuner._engine._clock).__name__
    counts = balance.tuner.report.micro_batch_count
    print(f"exact_max_rel={exact:.3e}\nclock={clock}\nmicro_batches={counts[0]}")
    if exact > 1e-5:
        failures.append(f"fp32 ZeRO-3 parameters differ from one process by {exact:.3e} (> 1e-5)")
    want_clock = "CudaIntervalClock" if device == "cuda" else "CpuIntervalClock"
    if clock != want_clock:
        failures.append(f"the engine's clock is {clock}, not {want_clock}")
    if counts != [4]:
        failures.append(f"expected 4 micro-batches of 16 per step, the report says {counts}")
    engine.destroy()

    steps = batches * 4  # 12 steps, windows of 2
    balance, engine = engine_of(device, window=2)
    _, base_wall = run(balance, engine, steps, device)
    base = measured(balance)
    engine.destroy()
    balance, engine = engine_of(device, window=2)
    waits.on = True
    _, wait_wall = run(balance, engine, steps, device)
    waits.on = False
    with_waits = measured(balance)
    per_step = waits.count / len(steps)
    engine.destroy()
    base_ms, wait_ms = sum(base_wall[-6:]) / 6, sum(wait_wall[-6:]) / 6
    injected = SLEEP_MS * per_step
    print(f"compute_ms={base:.3f}\ncompute_ms_with_waits={with_waits:.3f}")
    print(f"wall_ms={base_ms:.3f}\nwall_ms_with_waits={wait_ms:.3f}")
    print(f"collectives_per_step={per_step:.1f}\ninjected_ms_per_step={injected:.1f}")
    if per_step < 1:
        failures.append("ZeRO-3 issued no collective through deepspeed.comm: nothing to exclude")
    elif wait_ms - base_ms < 0.5 * injected:
        failures.append(f"the injected waits did not slow the step ({base_ms:.1f} -> "
                        f"{wait_ms:.1f} ms for {injected:.0f} ms injected): the check is broken")
    elif with_waits - base > 0.1 * injected:
        failures.append(f"measured compute grew by {with_waits - base:.1f} ms with "
                        f"{injected:.0f} ms of waits inside DeepSpeed's collectives")

    if device == "cuda":
        failures += check_bf16(batches)
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    return 1 if failures else 0


def check_bf16(batches) -> list:
    balance, engine = engine_of("cuda", bf16=True)
    losses, _ = run(balance, engine, batches * 3, "cuda")
    compute = balance.tuner.report.compute_ms[0]
    print(f"bf16_loss_first={losses[0]:.4f}\nbf16_loss_last={losses[-1]:.4f}")
    print(f"bf16_compute_ms={compute:.3f}")
    failures = []
    if not all(v == v and abs(v) < float("inf") for v in losses) or losses[-1] >= losses[0]:
        failures.append(f"bf16 ZeRO-3 did not train: losses {losses}")
    if not compute > 0:
        failures.append("bf16 ZeRO-3: no compute measured")
    engine.destroy()
    return failures


if __name__ == "__main__":
    status = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # Gloo's and NCCL's teardown can abort at exit under torch 2.11
