// The ports and the store of a one-node `hetrun run` (docs/ARCHITECTURE.md §2.4, the store): the
// free port of --master-port 0 and --standalone, held from the moment it is chosen; the
// standalone run id; the one-node store's port bound before the preflight and its libtorch part
// started right before the workers; where the hosted stores find the workers' torch.
#pragma once

#include <memory>
#include <string>

#include "commands/run/run_plan.h"
#include "commands/torchrun_args.h"
#include "hetrun/base/status.h"
#include "rendezvous/one_node_store.h"
#include "rendezvous/plugin_torch.h"
#include "rendezvous/store_port.h"

namespace hetrun::launcher {

/// Where the hosted stores find the workers' torch (the plugin's libtorch): `python`'s.
TorchDirLookup TorchDirOf(const std::string& python);

/// --master-port 0 (also from --rdzv-endpoint HOST:0, torchrun's "stacked single-node" form) and
/// --standalone without a port: a free port, bound on 127.0.0.1 now and held (`held`) for the
/// store hetrun hosts on it (rendezvous/store_port.h), never free for another process between.
/// True when one was chosen.
Result<bool> ChooseFreePort(TorchrunArgs& torchrun, StorePort* held);

/// --standalone without --run-id/--rdzv-id: a fresh UUID as torchrun's, so two standalone jobs
/// never share TORCHELASTIC_RUN_ID (the default "none" otherwise).
Status ChooseStandaloneRunId(TorchrunArgs& torchrun);

/// One launcher (one node): the store's port bound at once, before the preflight and any worker
/// (rendezvous/store_port.h: a taken port exits 78 naming it and its holder). Null across nodes,
/// where the rendezvous hosts the store.
Result<std::unique_ptr<OneNodeStore>> HoldOneNodeStore(const RunPlan& plan, StorePort free_port);

/// --dry-run: whether StartOneNodeStore would host the store (TORCHELASTIC_USE_AGENT_STORE=True):
/// the same lookup of the plugin and its torch that OneNodeStore::Start makes.
bool StoreWouldBeHosted(const RunPlan& plan);

/// Right before the workers start: the store's libtorch part comes up beside them (or, without
/// the plugin, the port is released for rank 0); a store that fails to come up stops them.
void StartOneNodeStore(OneNodeStore& store, RunPlan& plan);

}  // namespace hetrun::launcher
