// Spawning one worker: its own process group, its own environment, a parent-death signal, every
// signal at its default disposition and unblocked (an ignored SIGINT hetrun inherited must not
// reach the workers), no inherited descriptor but 0-2 and the ones MPI / Slurm hand down on
// purpose (PMI_FD), and exec errors reported back to the parent (127 not found, 126 not
// executable) instead of being guessed from an exit code.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// The program `name` would run, searched like execvp in `path_list` (the worker's PATH; when
/// empty, "/usr/local/bin:/usr/bin:/bin"). Names containing '/' are returned unchanged.
/// kNotFound when no entry has it; kFailedPrecondition when one has it but it is not an
/// executable regular file.
Result<std::string> ResolveCommand(const std::string& name, const std::string& path_list);

struct SpawnSpec {
  std::vector<std::string> argv;           ///< argv[0] is resolved with the env's PATH
  std::map<std::string, std::string> env;  ///< the child's whole environment
  int stdout_fd = -1;                      ///< becomes the child's fd 1; -1 = inherit
  int stderr_fd = -1;                      ///< becomes the child's fd 2; -1 = inherit
  std::vector<int> cpus{};                 ///< the child's CPU affinity; empty = inherited
};

/// Forks and execs `spec`. The child leads a new process group (pgid == pid) and gets SIGKILL
/// when hetrun dies (PR_SET_PDEATHSIG), so it never outlives the supervisor. Returns the pid
/// once exec has succeeded. Errors: kNotFound (exit 127) when the command does not exist,
/// kFailedPrecondition (exit 126) when it cannot be executed, kInternal for failed system calls
/// (in the child too: setpgid, prctl, dup2, sched_setaffinity, each named in the message).
/// A child whose exec failed has already been reaped.
Result<pid_t> SpawnProcess(const SpawnSpec& spec);

/// The exit code of the contract for a SpawnProcess error: 127, 126 or 70.
int ExitCodeForSpawnError(const Status& status);

}  // namespace hetrun::launcher
