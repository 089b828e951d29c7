#!/usr/bin/env python3
"""Per-step cost of hetrun's Python tuner: `with tuner.step(): tuner.loss(x)` against the same
loop without the tuner (x.sum() * factor), in one process (Gloo world of one, no DDP hook), and
the per-window boundary (record, one all-gather, solve) in isolation. Prints figures; asserts
nothing. Usage: python_tuner_bench.py [STEPS]"""

import statistics
import sys
import time

import torch
import torch.distributed as dist

import hetrun


def per_step_us(fn, steps: int) -> float:
    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        best.append((time.perf_counter() - t0) / steps * 1e6)
    return statistics.median(best)


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

    base = per_step_us(plain, steps)
    with_tuner = per_step_us(tuned, steps)
    print(f"python step path: {with_tuner:.2f} us per step with tuner.step() + tuner.loss(), "
          f"{base:.2f} us without: tuner overhead {with_tuner - base:.2f} us per step")
    windowed = hetrun.Tuner(32, window=1, warmup=0)

    def boundary():
        with windowed.step():
            windowed.loss(x)

    print(f"python window boundary (window=1, world of one): {per_step_us(boundary, 2000):.1f} us "
          f"per step incl. record, all-gather, solve")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
