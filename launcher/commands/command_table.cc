#include "commands/command.h"

namespace hetrun::launcher {
namespace {

constexpr Subcommand kSubcommands[] = {
    {"run", "start and supervise the local workers: hetrun [run] [OPTIONS] -- COMMAND ARGS...",
     commands::Run},
    {"env", "show the job topology (nodes, ranks, master) and where each value came from",
     commands::Env},
    {"plan", "pipeline stage split for mixed GPUs, its Volcano Job or Megatron arguments",
     commands::Plan},
    {"inspect", "list the CUDA kernel images (SASS, PTX) in ELF files", commands::Inspect},
    {"check", "check that every target GPU can run the kernels of an image (exit 80 if not)",
     commands::Check},
    {"simulate", "run the load-balancing tuner on a scenario, against baselines",
     commands::Simulate},
    {"vars", "list every environment variable hetrun reads or writes", commands::Vars},
    {"exit-codes", "list hetrun's exit codes and the Volcano policies keyed on them",
     commands::ExitCodes},
    {"version", "print hetrun's version and build features", commands::Version},
};

}  // namespace

std::span<const Subcommand> Subcommands() {
  return kSubcommands;
}

}  // namespace hetrun::launcher
