// TORCHELASTIC_ERROR_FILE, as torchrun hands it out: every worker gets the path of its own JSON
// file in the run folder; a Python worker whose main is wrapped in
// torch.distributed.elastic.multiprocessing.errors.record writes its uncaught exception there:
//   {"message": {"message": "RuntimeError: ...", "extraInfo": {"py_callstack": "Traceback ...",
//    "timestamp": "..."}}}
// (older writers put a plain string in "message"). hetrun reads it after the worker died, with
// bounds (a regular file of at most 64 KiB, nesting checked), for the termination log and the
// error line.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hetrun::launcher {

struct WorkerErrorReport {
  std::string message;                   ///< "torch.OutOfMemoryError: CUDA out of memory ..."
  std::vector<std::string> last_frames;  ///< the innermost traceback frames, outermost first
};

/// Largest error file read.
inline constexpr size_t kMaxErrorFileBytes = 64 * 1024;
/// Frames of the traceback kept (each "File ..., line N, in f" with its source line).
inline constexpr size_t kErrorFileFrames = 3;

/// The report in `path`; nullopt when the worker wrote none, or one hetrun cannot read (logged
/// at debug level: a broken error file must not hide the worker's exit code).
std::optional<WorkerErrorReport> ReadWorkerErrorFile(const std::string& path);

/// The innermost `frames` frames of a Python traceback text, outermost first, one string each
/// ("File \"train.py\", line 12, in step: loss = model(x)").
std::vector<std::string> LastTracebackFrames(const std::string& traceback, size_t frames);

}  // namespace hetrun::launcher
