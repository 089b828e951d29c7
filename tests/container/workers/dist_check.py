"""A small job under hetrun: a Gloo all-reduce over every rank, a file in /tmp, and what the
container allows: prints the rank's uid, parent pid and whether / is writable."""

import errno
import os
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
total = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(total)
world = dist.get_world_size()
assert total.item() == world * (world + 1) / 2, total
scratch = f"/tmp/scratch.{dist.get_rank()}"
with open(scratch, "w") as f:
    f.write("ok")
try:
    open("/root-write-probe", "w").close()
    root = "writable"
except OSError as error:
    root = "read-only" if error.errno == errno.EROFS else errno.errorcode[error.errno]
print(f"rank {dist.get_rank()}: sum {total.item():.0f} uid {os.getuid()} parent {os.getppid()} "
      f"root {root} tmp ok", flush=True)
dist.destroy_process_group()
sys.stdout.flush()
os._exit(0)
