"""A Python pipeline trainer that re-balances itself (docs/how-to/python-pipelines.md), run
under `hetrun run --plan FILE` by test_pipeline_rebalance.py: one rank per stage, GPipe-style
forward/backward of every micro-batch with send/recv of activations and gradients over Gloo, a
float64 nn.Sequential of LAYERS layers, AdamW per stage. Each window every rank all-gathers its
stage's figures, every rank asks the same Rebalancer, and a move sends the moving layers'
parameters and AdamW state to their new stage. The compute is emulated by sleeping BASE_MS per
layer and micro-batch forward (twice that backward), FACTOR times that on a stage given in
--slow STAGE:FACTOR.

    python pipeline_trainer.py --steps 14 --window 1 --slow 2:4 --out result.json
"""

from __future__ import annotations

import argparse
import json
import os
import time

import torch
import torch.distributed as dist

import hetrun
import hetrun.layer_moves as lm
import hetrun.pipeline as hp

WIDTH, BATCH = 6, 8


def full_model(layers: int) -> torch.nn.Sequential:
    """The whole model, as the one-process reference builds it: the same seed on every rank."""
    torch.manual_seed(0)
    return torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.Tanh())
                                 for _ in range(layers)]).double()


def batch(step: int):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.randn(BATCH, WIDTH, generator=g, dtype=torch.float64)
    return x, 0.5 * x.roll(1, dims=1)  # a target the model can learn


def new_optimizer(params):
    return torch.optim.AdamW(params, lr=0.02, weight_decay=0.01)


class Stage:
    """This rank's layers (a dict layer index -> module) and its optimizer."""

    def __init__(self, layers: dict):
        self.layers = layers
        self.opt = new_optimizer(self.params())

    def params(self):
        return [p for i in sorted(self.layers) for p in self.layers[i].parameters()]

    def forward(self, x):
        for i in sorted(self.layers):
            x = self.layers[i](x)
        return x


def move(stage: Stage, old_layout, new_layout, rank: int) -> int:
    """Carries out a move on this rank with the package's mover (hetrun.layer_moves):
    parameters and AdamW state travel, the optimizer is rebuilt with kept and received state."""
    kept = {p: stage.opt.state[p] for p in stage.params() if p in stage.opt.state}
    received = {}
    shapes = full_model(old_layout.num_layers)  # modules of the right shape, values overwritten

    def export_layer(layer):
        module = stage.layers.pop(layer)
        return lm.export_adam_layer(stage.opt, list(module.parameters()))

    def import_layer(layer, tensors):
        module = shapes[layer]
        received.update(lm.import_adam_layer(list(module.parameters()), tensors))
        stage.layers[layer] = module

    report = lm.move_layers(old_layout, new_layout, rank, export_layer, import_layer)
    mine = new_layout.stages[new_layout.stage_of(rank)]  # replicas that sent nothing drop too
    for layer in [i for i in stage.layers if not 0 <= i - mine.first_layer < mine.layers]:
        del stage.layers[layer]
    stage.opt = new_optimizer(stage.params())
    for p in stage.params():
        state = kept.get(p) or received.get(p)
        if state:
            stage.opt.state[p] = state
    return report.bytes_sent


def run_step(stage: Stage, step: int, micro: int, me: int, last: int, ranks: list, delay):
    """One GPipe step; returns (loss or None, forward ms, backward ms) per micro-batch."""
    x, y = batch(step)
    xs, ys = x.chunk(micro), y.chunk(micro)
    saved, loss_sum, fwd, bwd = [], 0.0, 0.0, 0.0
    for m in range(micro):
        inp = xs[m] if me == 0 else torch.empty(xs[m].shape, dtype=torch.float64)
        if me > 0:
            dist.recv(inp, ranks[me - 1])
            inp.requires_grad_()
        t0 = time.perf_counter()
        out = stage.forward(inp)
        loss = torch.nn.functional.mse_loss(out, ys[m]) / micro if me == last else None
        time.sleep(delay)
        fwd += time.perf_counter() - t0
        if me < last:
            dist.send(out.detach(), ranks[me + 1])
        saved.append((inp, out, loss))
    for inp, out, loss in reversed(saved):
        grad = None
        if me < last:
            grad = torch.empty(out.shape, dtype=torch.float64)
            dist.recv(grad, ranks[me + 1])
        t0 = time.perf_counter()
        if me == last:
            loss.backward()
            loss_sum += loss.item()
        else:
            out.backward(grad)
        time.sleep(2 * delay)
        bwd += time.perf_counter() - t0
        if me > 0:
            dist.send(inp.grad, ranks[me - 1])
    stage.opt.step()
    stage.opt.zero_grad(set_to_none=True)
    return (loss_sum if me == last else None), 1e3 * fwd / micro, 1e3 * bwd / micro


FIGURE = ("stage", "first_layer", "layers", "forward_ms", "backward_ms")


def all_gather(mine: dict) -> list:
    """Every rank's figure, in rank order: one float64 tensor of 5 numbers per rank (exact for
    the integers, and bit-identical on every rank, so every rank decides the same)."""
    t = torch.tensor([float(mine[k]) for k in FIGURE], dtype=torch.float64)
    out = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(out, t)
    return [dict(zip(FIGURE, v.tolist())) for v in out]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=14)
    ap.add_argument("--window", type=int, default=1)
    ap.add_argument("--slow", default="")
    ap.add_argument("--base-ms", type=float, default=2.0)
    ap.add_argument("--threshold", type=float, default=0.05)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    job = hetrun.init()
    dist.init_process_group("gloo")
    plan_path = os.environ["HETRUN_PLAN"]
    layout = hp.load_job_layout(plan_path)
    me, last = layout.stage_of(job.rank), len(layout.stages) - 1
    ranks = [s.ranks[0] for s in layout.stages]  # one replica per stage here
    slow = dict(map(int, kv.split(":")) for kv in args.slow.split(",") if kv)
    model = full_model(layout.num_layers)
    first, count = layout.stages[me].first_layer, layout.stages[me].layers
    stage = Stage({i: model[i] for i in range(first, first + count)})
    rebalancer = hp.Rebalancer(layout, threshold=args.threshold)
    log = hp.MeasurementLog.from_environment(layout, job.rank)
    result = {"split_first": layout.counts, "losses": [], "moves": [], "reasons": []}
    fwd_sum = bwd_sum = 0.0
    for step in range(args.steps):
        layers_now = layout.stages[me].layers
        delay = slow.get(me, 1) * args.base_ms * layers_now / 1e3
        loss, fwd, bwd = run_step(stage, step, layout.micro_batches, me, last, ranks, delay)
        result["losses"].append(loss)
        fwd_sum, bwd_sum = fwd_sum + fwd, bwd_sum + bwd
        if (step + 1) % args.window:
            continue
        s = layout.stages[me]
        mine = {"stage": me, "first_layer": s.first_layer, "layers": s.layers,
                "forward_ms": fwd_sum / args.window, "backward_ms": bwd_sum / args.window}
        fwd_sum = bwd_sum = 0.0
        log.append(hp.WindowMeasurement(
            window=step // args.window, revision=layout.revision, first_layer=s.first_layer,
            layers=s.layers, samples=BATCH * args.window, micro_batches=layout.micro_batches,
            forward_ms=mine["forward_ms"], backward_ms=mine["backward_ms"]))
        decision = rebalancer.decide(hp.stage_window(all_gather(mine), len(layout.stages)))
        result["reasons"].append(decision.reason)
        if not decision.move:
            continue
        new_layout = hp.with_split(layout, decision.new_counts)
        moved = move(stage, layout, new_layout, job.rank)
        rebalancer.applied(decision)
        layout = new_layout
        hp.record_move(layout)  # local rank 0: HETRUN_PLAN; rank 0: HETRUN_LAYOUT_STATE if set
        result["moves"].append({"step": step, "split": layout.counts, "bytes_sent": moved})
        if job.rank == 0:
            print(f"window {step // args.window}  move: {decision.reason}", flush=True)
    result.update(split_final=layout.counts, revision=layout.revision,
                  layers=sorted(stage.layers), params=[p.tolist() for p in stage.params()])
    dist.barrier()  # rank 0 wrote the layout file before it got here
    on_disk = hp.load_job_layout(plan_path)
    result.update(file_split=on_disk.counts, file_revision=on_disk.revision)
    with open(f"{args.out}.rank{job.rank}", "w") as f:
        json.dump(result, f)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
