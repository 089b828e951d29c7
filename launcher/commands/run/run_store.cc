#include "commands/run/run_store.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "hetrun/base/random_id.h"
#include "preflight/preflight.h"
#include "preflight/torch_location.h"

namespace hetrun::launcher {

TorchDirLookup TorchDirOf(const std::string& python) {
  return [python]() -> Result<std::filesystem::path> {
    HETRUN_ASSIGN_OR_RETURN(std::string dir, FindTorchPackageDir(python));
    return std::filesystem::path(dir);
  };
}

Result<bool> ChooseFreePort(TorchrunArgs& torchrun, StorePort* held) {
  std::vector<std::string>& options = torchrun.options;
  auto last = std::find(options.rbegin(), options.rend(), "--master-port");
  const bool zero = last != options.rend() && last != options.rbegin() && *(last - 1) == "0";
  if (!zero && !(torchrun.standalone && last == options.rend())) return false;
  Result<StorePort> port = StorePort::Hold("127.0.0.1", 0, StorePort());
  if (!port.ok()) return Status(port.status().code(), "a free port: " + port.status().message());
  *held = std::move(*port);
  if (zero) {
    *(last - 1) = std::to_string(held->port());
  } else {
    options.insert(options.end(), {"--master-port", std::to_string(held->port())});
  }
  return true;
}

Status ChooseStandaloneRunId(TorchrunArgs& torchrun) {
  std::vector<std::string>& options = torchrun.options;
  if (!torchrun.standalone ||
      std::find(options.begin(), options.end(), "--run-id") != options.end()) {
    return Status::Ok();
  }
  HETRUN_ASSIGN_OR_RETURN(std::string id, RandomUuid());
  spdlog::info("--standalone: run id {}", id);
  options.insert(options.end(), {"--run-id", id});
  return Status::Ok();
}

Result<std::unique_ptr<OneNodeStore>> HoldOneNodeStore(const RunPlan& plan, StorePort free_port) {
  if (MembershipOf(plan.topology).members != 1) return std::unique_ptr<OneNodeStore>();
  const std::string& host = plan.topology.master_addr.value;
  HETRUN_ASSIGN_OR_RETURN(
      StorePort port, StorePort::Hold(host, plan.topology.master_port.value, std::move(free_port)));
  spdlog::debug("store port {}:{} held", host, port.port());
  return std::make_unique<OneNodeStore>(host, std::move(port));
}

bool StoreWouldBeHosted(const RunPlan& plan) {
  return FindRendezvousLibrary(TorchDirOf(plan.preflight.python)).ok();
}

void StartOneNodeStore(OneNodeStore& store, RunPlan& plan) {
  plan.agent_store =
      store.Start(TorchDirOf(plan.preflight.python), spdlog::should_log(spdlog::level::debug));
  if (plan.agent_store) plan.supervision.on_signals_ready = [&store] { store.Arm(); };
}

}  // namespace hetrun::launcher
