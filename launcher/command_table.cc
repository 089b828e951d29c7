#include "command.h"

namespace hetrun::launcher {
namespace {

constexpr Subcommand kSubcommands[] = {
    {"vars", "list every environment variable hetrun reads or writes", RunVarsCommand},
    {"version", "print hetrun's version and build features", RunVersionCommand},
};

}  // namespace

std::span<const Subcommand> Subcommands() {
  return kSubcommands;
}

}  // namespace hetrun::launcher
