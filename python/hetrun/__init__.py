"""hetrun for PyTorch trainers in Python: the job contract, load balancing with exact gradients.

    job = hetrun.init()                       # the worker environment, as the C++ runtime reads it
    dist.init_process_group("gloo")           # the user's own call
    model = DistributedDataParallel(net)
    tuner = hetrun.Tuner(global_batch=192, window=10, model=model)
    for step in range(steps):
        lo, n = tuner.offset, tuner.share     # this rank's slice of this step's global batch
        with tuner.step():                    # times this rank's compute (not its waits)
            tuner.loss(per_sample_losses_of(x[lo:lo + n])).backward()
        opt.step(); opt.zero_grad()

The native part (hetrun._core) is a binding over hetrun's torch-free C++ core: the same worker
environment reader, windows, warm-up, cost model, speed-change detection and solver as the C++
runtime and `hetrun simulate`. It does not link libtorch; the torch side is plain Python over
torch.distributed, so it works with the torch of the user's image (see docs/tutorials/balancing-ddp.md).
hetrun.pipeline binds the pipeline core for live re-balancing: the layout file (HETRUN_PLAN), the
Rebalancer and the MeasurementLog (see docs/how-to/python-pipelines.md); hetrun.pipelining runs
the layout on torch.distributed.pipelining (PipelineStage, Schedule1F1B), re-planned live.
Tuner(model=) also takes the root module FSDP2's fully_shard returned (HSDP included): it times
each unit's compute between FSDP's hooks (docs/how-to/fsdp2.md).
"""

from hetrun._core import __version__
from hetrun._job import Job, beat, init

__all__ = ["Job", "ShareBatchSampler", "pipeline", "Tuner", "WindowReport", "beat", "init", "__version__"]

# The torch side loads on first use: `import hetrun` and hetrun.beat() do not import torch.
_LAZY = {"Tuner": "hetrun._tuner", "ShareBatchSampler": "hetrun._sampler",
         "WindowReport": "hetrun._report"}


def __getattr__(name):
    if name == "pipeline":  # the layout file, Rebalancer, MeasurementLog (torch-free)
        import importlib

        return importlib.import_module("hetrun.pipeline")
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hetrun' has no attribute {name!r}")
