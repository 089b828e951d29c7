"""One rank of bench/ddp_compare.sh, PyTorch's side: the same TinyGpt as examples/trainer/tiny_gpt.cc
(same shapes; its own initial weights), trained with torch.nn.parallel.DistributedDataParallel
over Gloo with DDP's defaults (bucket_cap_mb 25, gradient_as_bucket_view False), SGD, the same
equal shares and the same loss (sum of per-sample losses / global batch). Started with RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT. Prints the same line as bench/ddp_compare_worker.cc:
  "ddp-compare-rank R step_ms MEDIAN added_kib K buckets N grad_mib G"
added_kib: the peak resident memory (VmHWM) of the DDP steps minus that of one plain step on the
bare model taken first (gradients freed; the peak reset in between: /proc/self/clear_refs 5).
  ddp_compare_ddp.py STEPS WARMUP BATCH_PER_RANK DIM LAYERS SEQ BUCKET_MIB
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


def status_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


class TinyGpt(nn.Module):
    def __init__(self, vocab, seq, dim, heads, layers):
        super().__init__()
        self.vocab, self.seq = vocab, seq
        self.token = nn.Embedding(vocab, dim)
        self.position = nn.Embedding(seq, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=2 * dim, dropout=0.0)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), 1))

    def per_sample_loss(self, tokens, targets):
        x = self.token(tokens) + self.position(torch.arange(self.seq)).unsqueeze(0)
        x = self.blocks(x.transpose(0, 1), self.mask).transpose(0, 1)
        logits = self.head(x)
        losses = F.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1),
                                 reduction="none")
        return losses.view(tokens.shape[0], self.seq).mean(1)


def main():
    steps, warmup, per_rank, dim, layers, seq, bucket_mib = map(int, sys.argv[1:8])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234)
    model = TinyGpt(32, seq, dim, 2, layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    batch = per_rank * world
    gen = torch.Generator().manual_seed(rank)
    tokens = torch.randint(0, 32, (per_rank, seq + 1), generator=gen)
    (model(tokens[:, :-1], tokens[:, 1:]).sum() / batch).backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    before = status_kib("VmHWM")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=bucket_mib)
    times = []
    for step in range(steps):
        tokens = torch.randint(0, 32, (per_rank, seq + 1), generator=gen)
        start = time.perf_counter()
        optimizer.zero_grad()
        # DDP's forward arms the reducer; the per-sample loss runs through the wrapped module.
        losses = ddp(tokens[:, :-1], tokens[:, 1:])
        (losses.sum() / batch).backward()
        optimizer.step()
        if step >= warmup:
            times.append(1000 * (time.perf_counter() - start))
    times.sort()
    grad_mib = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**20
    sizes = str(ddp._get_ddp_logging_data().get("bucket_sizes", ""))
    buckets = len(sizes.split(",")) if sizes else -1
    print(f"ddp-compare-rank {rank} step_ms {times[len(times) // 2]:.2f} added_kib "
          f"{status_kib('VmHWM') - before} buckets {buckets} grad_mib {grad_mib:.1f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    TinyGpt.forward = TinyGpt.per_sample_loss
    main()
