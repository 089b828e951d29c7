"""A user worker started after the collective check: joins the job's Gloo group at the store
hetrun hosts (env://) and all-reduces its rank + 1; prints the sum and its attempt."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"worker rank={dist.get_rank()} sum={t.item():g} "
      f"attempt={os.environ['TORCHELASTIC_RESTART_COUNT']}", flush=True)
dist.destroy_process_group()
os._exit(0)  # torch's teardown can abort at exit under load; not what these tests are about
