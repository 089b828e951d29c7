// torchrun's command line for `hetrun run` (docs/tutorials/torchrun-to-hetrun.md): underscore
// spellings,
// --flag=value, --standalone, --rdzv-endpoint/--rdzv-backend/--rdzv-id, a fixed --nnodes N:N,
// and the program as torchrun takes it (`train.py ARGS`, `-m module ARGS`, `--no-python prog`),
// besides hetrun's own `-- COMMAND` form. A pure translation into hetrun's own options, done
// before cxxopts parses them; elastic ranges and etcd rendezvous are clear usage errors that
// say what hetrun does instead.
#pragma once

#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "supervise/supervisor.h"

namespace hetrun::launcher {

/// One long option hetrun run knows (from its cxxopts table): its name and whether it takes a
/// value.
struct KnownOption {
  std::string name;
  bool takes_value = true;
};

/// How the worker program is started.
enum class ProgramKind {
  kExec,          ///< argv as given (hetrun's `-- COMMAND`, or --no-python, or not a .py file)
  kPythonScript,  ///< `PYTHON script.py ARGS` (a .py program, or --run-path)
  kPythonModule,  ///< `PYTHON -m module ARGS` (-m / --module)
};

struct TorchrunArgs {
  std::vector<std::string> options;  ///< hetrun's own spelling, for cxxopts
  std::vector<std::string> program;  ///< the program and its arguments, untouched
  ProgramKind kind = ProgramKind::kExec;
  bool standalone = false;  ///< --standalone: one node, a free local port
  /// torchrun options accepted without effect: one warning line each, naming the option as
  /// given and what hetrun does instead.
  std::vector<std::string> ignored;
};

/// Translates `args` (hetrun run's arguments, global options already removed). `known` lists
/// the long options of hetrun run. An unknown option is a usage error that suggests the nearest
/// known one, underscore spellings included.
Result<TorchrunArgs> TranslateTorchrunArgs(const std::vector<std::string>& args,
                                           const std::vector<KnownOption>& known);

/// argv of every worker: `program` started as `kind` says, with `python` as the interpreter.
std::vector<std::string> WorkerCommand(const TorchrunArgs& args, const std::string& python);

/// torchrun's --tee / --redirects value: 0-3 for every local rank, or "0:1,1:2" per local rank.
Result<StreamMask> ParseStreamMask(const std::string& text);

/// --local-ranks-filter: a comma list of local ranks ("0,1").
Result<std::vector<int>> ParseLocalRanks(const std::string& text);

}  // namespace hetrun::launcher
