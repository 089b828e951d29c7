"""hetrun's balancing inside the trainers users already run (docs/how-to/stock-trainers.md).

Each submodule imports its own library, and only when it is imported itself:

    hetrun.integrations.transformers   HetrunTrainer, a drop-in transformers.Trainer
    hetrun.integrations.lightning      HetrunBalancing, a Lightning callback
    hetrun.integrations.accelerate     balanced_dataloader() / BalancedStep for an Accelerator loop
    hetrun.integrations.deepspeed      ZeroBalance for a DeepSpeed ZeRO engine loop (stages 0-3)

The first three split every optimizer step's global batch over the data-parallel ranks with one
hetrun.Tuner (the same core as the C++ runtime), time each rank's compute only (from its first
forward to its last gradient bucket, through the Tuner's DDP communication hook), and keep the
update exact: each rank's loss is scaled so that DDP's mean all-reduce yields the gradient of the
whole global batch, whatever the split (hetrun.integrations._steps). ZeroBalance does the same
for DeepSpeed's engine, timing its compute between DeepSpeed's collectives
(hetrun/engines/deepspeed.py); it imports no DeepSpeed itself.
"""

__all__ = ["accelerate", "deepspeed", "lightning", "transformers"]
