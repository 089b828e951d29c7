"""tests/gpu/run.sh step fsdp2: hetrun.Tuner under FSDP2 on one GPU (NCCL, world size 1).

Checks what the CPU tests cannot: the CUDA-event intervals (hetrun/engines/fsdp.py's
CudaIntervalClock) and MixedPrecisionPolicy. Prints key=value figures; exits 1 naming the first
failed check.
  1. exact: fp32, per-layer fully_shard + root, 3 steps with accumulation (micro_batches), the
     parameters against the same model in one plain process (float32, 1e-5 relative);
  2. waits excluded: a GPU sleep of ~20 ms injected into every unit's pre-forward (FSDP's hook,
     where an all-gather wait sits) must not reach the measured compute, while the step's wall
     time grows by it;
  3. mixed precision: MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32,
     output_dtype=float32): trains (loss finite and falling), intervals complete, and the
     parameters stay within 5e-2 of the fp32 reference.
"""

from __future__ import annotations

import os
import sys
import time

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

import hetrun


def net() -> torch.nn.Sequential:
    torch.manual_seed(0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.GELU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(1024, 8)).cuda()


def shard(model, mp=None):
    kw = {} if mp is None else {"mp_policy": mp}
    for m in model:
        if isinstance(m, torch.nn.Linear):
            fully_shard(m, **kw)
    return fully_shard(model, **kw)


def data(steps=3, batch=64):
    g = torch.Generator(device="cuda").manual_seed(1)
    return [(torch.randn(batch, 1024, device="cuda", generator=g),
             torch.randn(batch, 8, device="cuda", generator=g)) for _ in range(steps)]


def train(model, tuner, batches, micro=16):
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for x, y in batches:
        with tuner.step():
            lo, sizes = tuner.offset, tuner.micro_batches(micro)
            total = 0.0
            for i, m in enumerate(sizes):
                model.set_requires_gradient_sync(i == len(sizes) - 1)
                per = (model(x[lo:lo + m]) - y[lo:lo + m]).pow(2).mean(1)
                loss = tuner.loss(per)
                loss.backward()
                total += float(loss.detach())
                lo += m
        losses.append(total)
        opt.step()
        opt.zero_grad()
    return losses


def reference(batches):
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for x, y in batches:
        (model(x) - y).pow(2).mean(1).mean().backward()
        opt.step()
        opt.zero_grad()
    return model


def max_rel(model, ref):
    worst = 0.0
    for p, q in zip(model.parameters(), ref.parameters()):
        full = p.full_tensor().float()
        worst = max(worst, ((full - q).abs().max() / q.abs().max().clamp_min(1e-12)).item())
    return worst


def compute_ms(tuner, model, batches, steps=12):
    """Mean measured compute and wall ms over `steps` steps (after the event queue drained)."""
    seen, wall = [], []
    for i in range(steps):
        x, y = batches[i % len(batches)]
        t0 = time.perf_counter()
        with tuner.step():
            tuner.loss((model(x) - y).pow(2).mean(1)).backward()
        torch.cuda.synchronize()
        wall.append((time.perf_counter() - t0) * 1000)
    for r in tuner.reports:
        seen.extend(r.compute_ms)
    return sum(seen[-2:]) / 2, sum(wall[-6:]) / 6


def inject_wait(model, ms=20.0):
    """A GPU sleep inside FSDP's pre-forward of every unit (where its all-gather wait sits);
    wraps FSDP's private parameter-group method, for this check only."""
    cycles = int(ms * 1e-3 * torch.cuda.get_device_properties(0).clock_rate * 1e3)
    for m in model.modules():
        if hasattr(m, "_get_fsdp_state"):
            group = m._get_fsdp_state()._fsdp_param_group
            original = group.pre_forward

            def pre_forward(*a, original=original, **k):
                torch.cuda._sleep(cycles)
                return original(*a, **k)
            group.pre_forward = pre_forward


def check_measured_memory(batches, ref) -> list:
    """bytes_per_sample="measure": the line fitted from the first two steps' peaks caps later
    micro-batches so the peak stays within a ceiling set 20 samples above the fixed part."""
    failures = []
    probe_model = shard(net())
    probe = hetrun.Tuner(64, window=1, warmup=0, model=probe_model, tune=False,
                         bytes_per_sample="measure", memory_ceiling_bytes=1 << 40)
    train(probe_model, probe, batches, micro=64)
    fitted = probe.memory_model
    print(f"memory_fit={fitted}")
    if not fitted["per_sample"] or fitted["per_sample"] <= 0:
        return [f"measured memory: no per-sample bytes fitted ({fitted})"]
    if max_rel(probe_model, ref) > 1e-5:
        failures.append("measured memory: the half-size probe step changed the gradients")
    model = shard(net())
    torch.cuda.synchronize()
    ceiling = (torch.cuda.memory_allocated() + fitted["base"] + 20 * fitted["per_sample"])
    tuner = hetrun.Tuner(64, window=1, warmup=0, model=model, tune=False,
                         bytes_per_sample="measure", memory_ceiling_bytes=ceiling)
    train(model, tuner, batches[:2], micro=64)  # the probe steps
    torch.cuda.reset_peak_memory_stats()
    train(model, tuner, batches[2:] * 2, micro=64)
    peak = torch.cuda.max_memory_allocated()
    print(f"memory_cap={tuner.max_micro_batch}\nmemory_peak={peak}\nmemory_ceiling={ceiling}")
    if tuner.max_micro_batch is None or not 1 <= tuner.max_micro_batch < 64:
        failures.append(f"measured memory: cap {tuner.max_micro_batch} (expected about 20)")
    if peak > ceiling:
        failures.append(f"measured memory: peak {peak} above the ceiling {ceiling}")
    return failures


def main() -> int:
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    dist.init_process_group("nccl", rank=0, world_size=1)
    torch.cuda.set_device(0)
    batches = data()
    ref = reference(batches)
    failures = []

    model = shard(net())
    tuner = hetrun.Tuner(64, window=1, warmup=0, model=model, tune=False)
    train(model, tuner, batches)
    exact = max_rel(model, ref)
    print(f"exact_max_rel={exact:.3e}")
    print(f"clock={type(tuner._engine._clock).__name__}")
    if exact > 1e-5:
        failures.append(f"fp32 parameters differ from one process by {exact:.3e} (> 1e-5)")

    plain = shard(net())
    t1 = hetrun.Tuner(64, window=4, warmup=0, model=plain, tune=False)
    base_compute, base_wall = compute_ms(t1, plain, batches)
    slow = shard(net())
    inject_wait(slow)
    t2 = hetrun.Tuner(64, window=4, warmup=0, model=slow, tune=False)
    wait_compute, wait_wall = compute_ms(t2, slow, batches)
    print(f"compute_ms={base_compute:.3f}\ncompute_ms_with_waits={wait_compute:.3f}")
    print(f"wall_ms={base_wall:.3f}\nwall_ms_with_waits={wait_wall:.3f}")
    injected = 20.0 * 5  # 5 units, one sleep each per forward
    if wait_wall - base_wall < 0.5 * injected:
        failures.append(f"the injected waits did not slow the step ({base_wall:.1f} -> "
                        f"{wait_wall:.1f} ms): the check itself is broken")
    if wait_compute - base_compute > 0.1 * injected:
        failures.append(f"measured compute grew by {wait_compute - base_compute:.1f} ms with "
                        f"{injected:.0f} ms of waits inside FSDP's hooks")

    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32,
                              output_dtype=torch.float32)
    mixed = shard(net(), mp)
    t3 = hetrun.Tuner(64, window=1, warmup=0, model=mixed, tune=False)
    losses = train(mixed, t3, batches * 3)
    drift = max_rel(mixed, reference(batches * 3))
    print(f"mixed_loss_first={losses[0]:.4f}\nmixed_loss_last={losses[-1]:.4f}")
    print(f"mixed_max_rel={drift:.3e}\nmixed_compute_ms={t3.report.compute_ms[0]:.3f}")
    if not all(map(lambda v: v == v and abs(v) < float("inf"), losses)) or losses[-1] >= losses[0]:
        failures.append(f"mixed precision did not train: losses {losses}")
    if drift > 5e-2:
        failures.append(f"mixed-precision parameters drifted {drift:.3e} from fp32 (> 5e-2)")
    if not t3.report.compute_ms[0] > 0:
        failures.append("mixed precision: no compute measured")
    failures += check_measured_memory(batches, ref)
    dist.destroy_process_group()
    for f in failures:
        print(f"FAIL: {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
