#!/usr/bin/env python3
"""A heterogeneous pipeline of a small GPT on torch.distributed.pipelining with hetrun.pipelining:
N blocks (block 0 also holds the embeddings, the last block the final norm and the head), split
as the job layout says (HETRUN_PLAN), re-planned live from the measured stage speeds.

    hetrun run --nproc-per-node 2 --plan plan.json -- python examples/python/train_pipeline.py \\
        --layers 8 --batch 16 --steps 20 --window 3 [--replan live|off] [--summary FILE]
    python examples/python/train_pipeline.py --reference --layers 8 ...   # one process, whole

The layout's micro-batch count and schedule (1f1b or gpipe) are used; a uniform PP x DP layout
(every stage the same number of ranks) trains each replica on its part of every global batch.
With --summary FILE the last stage's first rank writes key=value figures: losses= (every
step's loss), the split before and after, moves= and per move its seconds (decision to rebuilt
schedule) and the first step after it, step_ms_first= / step_ms= (median step before the first
and after the last move) and the planner's 1F1B prediction before and after (predicted_ms=).
With --replan restart a move saves a checkpoint to --checkpoint-dir and exits 82; run again on
the recorded layout, it resumes there. CPU: float64 (exact against --reference); CUDA: float32.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

VOCAB = 32


class Block(torch.nn.Module):
    """A pre-norm causal self-attention block; block 0 embeds tokens, the last one predicts."""

    def __init__(self, index: int, layers: int, dim: int, seq: int) -> None:
        super().__init__()
        self.first, self.last = index == 0, index == layers - 1
        if self.first:
            self.token = torch.nn.Embedding(VOCAB, dim)
            self.position = torch.nn.Embedding(seq, dim)
        self.block = torch.nn.TransformerEncoderLayer(dim, 2, dim_feedforward=2 * dim,
                                                      dropout=0.0, batch_first=True,
                                                      norm_first=True)
        if self.last:
            self.norm = torch.nn.LayerNorm(dim)
            self.head = torch.nn.Linear(dim, VOCAB)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), -math.inf), 1),
                             persistent=False)

    def forward(self, x):
        if self.first:
            x = self.token(x) + self.position(torch.arange(x.shape[1], device=x.device))
        x = self.block(x, src_mask=self.mask[:x.shape[1], :x.shape[1]], is_causal=True)
        return self.head(self.norm(x)) if self.last else x


def build_layers(args, dtype, device):
    torch.manual_seed(1234)  # the same model on every rank and in --reference
    return [Block(i, args.layers, args.dim, args.seq).to(device, dtype)
            for i in range(args.layers)]


def loss_fn(logits, targets):
    return torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def optimizer(params):
    return torch.optim.AdamW(params, lr=3e-3, weight_decay=0.01)


def batch(step: int, args):
    """Step's global batch: the affine recurrence t' = (5 t + 3) mod VOCAB, 10% random tokens."""
    g = torch.Generator().manual_seed(100 + step)
    start = torch.randint(0, VOCAB, (args.batch, 1), generator=g)
    rows = [start]
    for _ in range(args.seq):
        nxt = (5 * rows[-1] + 3) % VOCAB
        noise = torch.rand(args.batch, 1, generator=g) < 0.1
        rows.append(torch.where(noise, torch.randint(0, VOCAB, (args.batch, 1), generator=g), nxt))
    t = torch.cat(rows, 1)
    return t[:, :-1], t[:, 1:]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--seq", type=int, default=16)
    p.add_argument("--window", type=int, default=3)
    p.add_argument("--micro-batches", type=int, default=4, help="--reference only (else the "
                   "layout's)")
    p.add_argument("--replan", choices=("live", "restart", "off"), default="live",
                   help="restart: on a move save a checkpoint to --checkpoint-dir and exit 82")
    p.add_argument("--checkpoint-dir", help="--replan restart's checkpoint (resumed from)")
    p.add_argument("--threshold", type=float, default=0.05)
    p.add_argument("--reference", action="store_true", help="the whole model in one process")
    p.add_argument("--summary", help="write key=value figures here")
    args = p.parse_args()
    for name in ("layers", "batch", "steps", "dim", "seq", "micro_batches"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    return args


def write_summary(path: str, figures: dict) -> None:
    with open(path, "w") as f:
        for key, value in figures.items():
            if isinstance(value, (list, tuple)):
                value = ",".join(repr(v) if isinstance(v, float) else str(v) for v in value)
            f.write(f"{key}={value}\n")


def reference(args) -> None:
    """The one-process run: every micro-batch's mean loss / M accumulated, one AdamW step."""
    layers = build_layers(args, torch.float64, torch.device("cpu"))
    model = torch.nn.Sequential(*layers)
    opt = optimizer(list(model.parameters()))
    losses = []
    for step in range(args.steps):
        x, y = batch(step, args)
        total = 0.0
        for xm, ym in zip(x.tensor_split(args.micro_batches), y.tensor_split(args.micro_batches)):
            loss = loss_fn(model(xm), ym) / args.micro_batches
            loss.backward()
            total += loss.item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(total)
    if args.summary:
        write_summary(args.summary, {"losses": losses, "steps": args.steps})


def train(args) -> None:
    import hetrun
    import hetrun.pipelining

    hetrun.init()
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")
    dtype = torch.float32 if cuda else torch.float64
    pipe = hetrun.pipelining.Pipeline(build_layers(args, dtype, device), loss_fn, optimizer,
                                      window=args.window, replan=args.replan,
                                      threshold=args.threshold, device=device,
                                      checkpoint_dir=args.checkpoint_dir)
    split_first, losses, step_ms = list(pipe.layout.counts), [], []
    first_step_at = time.time()  # a resumed run: its first step starts now (after the load)
    for step in range(pipe.steps, args.steps):  # a resumed run starts at its checkpoint's step
        x, y = batch(step, args)
        began = time.perf_counter()
        try:
            losses.append(pipe.step(x, y))
        except hetrun.pipelining.ReplanRequested as replan:
            if args.summary and pipe.is_last and pipe.mesh.replica == 0:
                figures = summary(pipe, split_first, losses + [pipe.last_loss], step_ms)
                write_summary(args.summary, {**figures, "exit": replan.code,
                                             "replan_split": replan.split,
                                             "decided_at": time.time()})
            raise
        step_ms.append((time.perf_counter() - began) * 1000.0)
        if pipe.moves and pipe.moves[-1]["step"] == step + 1 and dist.get_rank() == 0:
            m = pipe.moves[-1]
            print(f"step {step + 1}: move {','.join(map(str, m['before']))} -> "
                  f"{','.join(map(str, m['split']))} ({m['seconds']:.3f} s): {m['reason']}",
                  flush=True)
    if args.summary and pipe.is_last and pipe.mesh.replica == 0:
        write_summary(args.summary, {**summary(pipe, split_first, losses, step_ms),
                                     "first_step_at": first_step_at})
    dist.barrier()
    dist.destroy_process_group()


def summary(pipe, split_first, losses, step_ms) -> dict:
    settled = pipe.moves[-1]["step"] + 1 if pipe.moves else 1  # the step after a move rebuilds
    tail = step_ms[settled:] or step_ms
    return {"losses": losses, "first_step": pipe.resumed_at or 0,
            "split_first": split_first, "split_final": list(pipe.layout.counts),
            "moves": len(pipe.moves), "move_seconds": [m["seconds"] for m in pipe.moves],
            "move_layers": [len(m["layers"]) for m in pipe.moves],
            # the first step on the new split (its schedule infers shapes again)
            "move_next_step_ms": [step_ms[m["step"]] for m in pipe.moves
                                  if m["step"] < len(step_ms)],
            "step_ms_first": statistics.median(step_ms[1:settled] or step_ms),
            "step_ms": statistics.median(tail),
            "predicted_ms": pipe.moves[-1]["predicted_ms"] if pipe.moves else 0.0,
            "predicted_before_ms": pipe.moves[0]["predicted_before_ms"] if pipe.moves else 0.0,
            "revision": pipe.layout.revision,
            "reason_last": pipe.reasons[-1] if pipe.reasons else ""}


def main() -> None:
    args = parse_args()
    if args.reference:
        reference(args)
    else:
        train(args)


if __name__ == "__main__":
    try:
        main()
        code = 0
    except SystemExit as done:  # hetrun.pipelining.ReplanRequested: 82 after the checkpoint
        code = done.code if isinstance(done.code, int) else 1
    # Out without the interpreter's finalization: under torch 2.11 with Gloo a worker thread of
    # the process group can still be freeing the last collective's tensors while Python
    # finalizes, and the process then aborts (SIGABRT) after a finished run
    # (docs/how-to/fsdp2.md, "Limits"). Everything is written and flushed here.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
