// Fuzzes ResolveTopology with arbitrary launcher environments. Input: lines "NAME=VALUE"; NAME
// is one of the variables below, "flag:<name>" for a flag, "host" for the host name, or
// "file:<stem>" for a Volcano host file (its content: VALUE with '|' as line breaks). Every
// input must give a topology or an error, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "hetrun/job/topology.h"

namespace {

bool Declared(std::string_view name) {
  return hetrun::FindEnvVarSpec(name) != nullptr;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> vars;
  hetrun::TopologyInputs inputs;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string name(line.substr(0, eq));
    std::string value(line.substr(eq + 1));
    if (name == "host") {
      inputs.hostname = value;
    } else if (name == "gpus") {
      inputs.local_gpu_count = static_cast<int>(value.size() % 9);
    } else if (name.starts_with("file:")) {
      for (char& c : value) c = c == '|' ? '\n' : c;
      inputs.volcano_host_files[name.substr(5)] = value;
    } else if (name == "flag:nnodes") {
      inputs.flags.nnodes = value;
    } else if (name == "flag:node-rank") {
      inputs.flags.node_rank = value;
    } else if (name == "flag:nproc-per-node") {
      inputs.flags.nproc_per_node = value;
    } else if (name == "flag:master-addr") {
      inputs.flags.master_addr = value;
    } else if (name == "flag:master-port") {
      inputs.flags.master_port = value;
    } else if (Declared(name)) {
      vars[name] = value;
    }
    if (end == text.size()) break;
  }
  inputs.env = hetrun::Environment(std::move(vars));
  (void)hetrun::NeedsLocalGpuCount(inputs.env, inputs.flags);
  hetrun::Result<hetrun::Topology> topology = hetrun::ResolveTopology(inputs);
  if (topology.ok()) {
    // Invariants every resolved topology keeps.
    if (topology->ranks.size() != topology->local_ranks.size()) __builtin_trap();
    if (topology->node_rank.value >= topology->nnodes.value) __builtin_trap();
    for (int rank : topology->ranks) {
      if (rank < 0 || rank >= topology->world_size) __builtin_trap();
    }
  }
  return 0;
}
