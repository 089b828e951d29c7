#include "exit_code.h"

#include <sys/wait.h>

namespace hetrun::launcher {

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return kExitOk;
    case StatusCode::kUsage:
      return kExitUsage;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
      return kExitConfig;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return kExitTransient;
    case StatusCode::kArchMismatch:
      return kExitArchMismatch;
    case StatusCode::kResourceExhausted:
      return kExitMemory;
    case StatusCode::kInternal:
      return kExitInternal;
  }
  return kExitInternal;
}

int ExitCodeForWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitInternal;
}

}  // namespace hetrun::launcher
