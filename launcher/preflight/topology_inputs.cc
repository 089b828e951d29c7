#include "preflight/topology_inputs.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hetrun/job/inventory.h"
#include "preflight/gpu_probe.h"

namespace hetrun::launcher {
namespace {

// A host file lists a task's pods, one short name a line: a megabyte is far beyond any job.
constexpr std::uintmax_t kMaxHostFileBytes = 1 << 20;

std::optional<std::string> Flag(const cxxopts::ParseResult& parsed, const std::string& name) {
  if (!parsed.count(name)) return std::nullopt;
  return parsed[name].as<std::string>();
}

Result<std::string> ReadHostFile(const std::filesystem::path& path) {
  std::error_code ec;
  std::uintmax_t bytes = std::filesystem::file_size(path, ec);
  if (ec) return ErrnoError("stat", path.string(), ec.value());
  if (bytes > kMaxHostFileBytes) {
    return InvalidArgumentError("Volcano host file " + path.string() + " is " +
                                std::to_string(bytes) + " bytes (at most " +
                                std::to_string(kMaxHostFileBytes) + ")");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoError("open", path.string(), errno);
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return ErrnoError("read", path.string(), errno);
  return content.str();
}

}  // namespace

void AddTopologyOptions(cxxopts::Options& options) {
  options.add_options("topology")("nnodes",
                                  "nodes (pods) in the job (overrides HETRUN_NNODES and launchers)",
                                  cxxopts::value<std::string>())(
      "node-rank", "this node's index, 0-based", cxxopts::value<std::string>())(
      "nproc-per-node", "workers per node: a number, or auto (one per local GPU)",
      cxxopts::value<std::string>())("master-addr", "address of node 0 (rendezvous host)",
                                     cxxopts::value<std::string>())(
      "master-port", "rendezvous port on node 0", cxxopts::value<std::string>())(
      "fake-gpus", "declared local GPUs NAME:MAJOR.MINOR:USABLE_MIB,... (HETRUN_FAKE_GPUS)",
      cxxopts::value<std::string>());
}

TopologyOptionValues ReadTopologyOptions(const cxxopts::ParseResult& parsed) {
  TopologyOptionValues values;
  values.flags.nnodes = Flag(parsed, "nnodes");
  values.flags.node_rank = Flag(parsed, "node-rank");
  values.flags.nproc_per_node = Flag(parsed, "nproc-per-node");
  values.flags.master_addr = Flag(parsed, "master-addr");
  values.flags.master_port = Flag(parsed, "master-port");
  values.fake_gpus = Flag(parsed, "fake-gpus").value_or("");
  return values;
}

Result<std::map<std::string, std::string>> ReadVolcanoHostFiles(const std::string& dir,
                                                                bool must_exist) {
  std::map<std::string, std::string> files;
  std::error_code ec;
  bool is_dir = std::filesystem::is_directory(dir, ec);
  if (!is_dir) {
    if (!must_exist) return files;
    return NotFoundError("HETRUN_VOLCANO_HOST_DIR='" + dir + "' (environment): not a directory");
  }
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return ErrnoError("opendir", dir, ec.value());
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) return ErrnoError("readdir", dir, ec.value());
    const std::filesystem::path& path = it->path();
    if (path.extension() != ".host") continue;
    HETRUN_ASSIGN_OR_RETURN(std::string content, ReadHostFile(path));
    files[path.stem().string()] = std::move(content);
  }
  if (ec) return ErrnoError("readdir", dir, ec.value());
  return files;
}

Result<TopologyInputs> GatherTopologyInputs(const Environment& env, const TopologyFlags& flags,
                                            std::string_view fake_gpus) {
  TopologyInputs inputs;
  inputs.env = env;
  inputs.flags = flags;
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) return ErrnoError("gethostname", "", errno);
  inputs.hostname = host;

  std::optional<std::string> dir = env.Get("HETRUN_VOLCANO_HOST_DIR");
  HETRUN_ASSIGN_OR_RETURN(inputs.volcano_host_files,
                          ReadVolcanoHostFiles(dir.value_or("/etc/volcano"), dir.has_value()));

  // The inventory is read when the worker count needs it, or when it is declared (no probe):
  // either way `hetrun env` shows each local GPU's model.
  const bool declared = !fake_gpus.empty() || env.Get("HETRUN_FAKE_GPUS").has_value();
  if (NeedsLocalGpuCount(env, flags) || declared) {
    std::unique_ptr<GpuProbe> probe = MakeSystemGpuProbe();
    HETRUN_ASSIGN_OR_RETURN(Inventory inventory, LocalInventory(env, fake_gpus, probe.get()));
    inputs.local_gpu_count = static_cast<int>(inventory.gpus.size());
    for (const GpuInfo& gpu : inventory.gpus) inputs.local_gpu_models.push_back(gpu.model);
  }
  return inputs;
}

}  // namespace hetrun::launcher
