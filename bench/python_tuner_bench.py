#!/usr/bin/env python3
"""Per-step cost of hetrun's Python tuner: `with tuner.step(): tuner.loss(x)` against the same
loop without the tuner (x.sum() * factor), in one process (Gloo world of one, no DDP hook), and
the per-window boundary (record, one all-gather, solve) in isolation. Prints figures; asserts
nothing. Usage: python_tuner_bench.py [STEPS]"""

import copy
import statistics
import sys
import time

import torch
import torch.distributed as dist

import hetrun


def per_step_us(fn, steps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    return (time.perf_counter() - t0) / steps * 1e6


def compare_us(without, with_tuner, steps: int, rounds: int = 9):
    """Medians of alternating rounds (a loaded machine drifts; alternation cancels most of it)."""
    a, b = [], []
    for _ in range(rounds):
        a.append(per_step_us(without, steps))
        b.append(per_step_us(with_tuner, steps))
    return statistics.median(a), statistics.median(b)


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:0", rank=0, world_size=1)
    x = torch.ones(32)
    # A window so long it never closes: the per-step path alone.
    tuner = hetrun.Tuner(32, window=10**9, warmup=0)
    factor = 1 / 32

    def plain():
        return x.sum() * factor

    def tuned():
        with tuner.step():
            return tuner.loss(x)

    base, with_tuner = compare_us(plain, tuned, steps)
    print(f"python step path: {with_tuner:.2f} us per step with tuner.step() + tuner.loss(), "
          f"{base:.2f} us without: tuner overhead {with_tuner - base:.2f} us per step")
    windowed = hetrun.Tuner(32, window=1, warmup=0)

    def boundary():
        with windowed.step():
            windowed.loss(x)

    # With model=: the tuner's DDP communication hook (Python, per gradient bucket) instead of
    # DDP's built-in C++ all-reduce hook, on a small model (one bucket) in a world of one.
    net = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.Tanh(), torch.nn.Linear(256, 8))
    plain_ddp = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(net))
    hooked = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(net))
    ddp_tuner = hetrun.Tuner(32, window=10**9, warmup=0, model=hooked)
    xs = torch.randn(32, 256)

    def ddp_plain():
        (plain_ddp(xs).pow(2).mean(dim=1).sum() / 32).backward()

    def ddp_tuned():
        with ddp_tuner.step():
            ddp_tuner.loss(hooked(xs).pow(2).mean(dim=1)).backward()

    ddp_base, ddp_with = compare_us(ddp_plain, ddp_tuned, steps // 10)
    print(f"DDP step (forward + backward, world of one): {ddp_with:.1f} us with the tuner and its "
          f"comm hook, {ddp_base:.1f} us with DDP's own hook: {ddp_with - ddp_base:.1f} us per step")
    print(f"python window boundary (window=1, world of one): {per_step_us(boundary, 2000):.1f} us "
          f"per step incl. record, all-gather, solve")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
