"""The data-parallel engines hetrun.Tuner drives (docs/ARCHITECTURE.md §5.2, §5.8): base (the
interface every engine implements), plain (no model=), ddp (DistributedDataParallel), fsdp
(FSDP2's fully_shard, HSDP included). An engine imports base only, never another engine;
hetrun._tuner (engine_for) chooses one. This file imports nothing, so importing one engine loads
no other."""
