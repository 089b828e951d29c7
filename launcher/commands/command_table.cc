#include "commands/command.h"

namespace hetrun::launcher {
namespace {

constexpr Subcommand kSubcommands[] = {
    {"run", "start and supervise the local workers: hetrun [run] [OPTIONS] -- COMMAND ARGS...",
     RunRunCommand},
    {"env", "show the job topology (nodes, ranks, master) and where each value came from",
     RunEnvCommand},
    {"plan", "pipeline stage split for mixed GPUs, and its Volcano Job", RunPlanCommand},
    {"inspect", "list the CUDA kernel images (SASS, PTX) in ELF files", RunInspectCommand},
    {"check", "check that every target GPU can run the kernels of an image (exit 80 if not)",
     RunCheckCommand},
    {"simulate", "run the load-balancing tuner on a scenario, against baselines",
     RunSimulateCommand},
    {"vars", "list every environment variable hetrun reads or writes", RunVarsCommand},
    {"version", "print hetrun's version and build features", RunVersionCommand},
};

}  // namespace

std::span<const Subcommand> Subcommands() {
  return kSubcommands;
}

}  // namespace hetrun::launcher
