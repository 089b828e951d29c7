// One worker output stream (stdout or stderr) on its way to the console and the rank's log file.
// Output is cut into whole lines so ranks never interleave mid-line; with --tee every line gets
// a "[rank R] " prefix. The last lines are kept for the termination log.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "supervise/console_sink.h"

namespace hetrun::launcher {

class OutputTee {
 public:
  /// Lines longer than this are written in pieces of this size, each one prefixed.
  static constexpr size_t kMaxLineBytes = 64 * 1024;
  /// Each kept tail line is cut to this many bytes.
  static constexpr size_t kMaxTailLineBytes = 512;

  /// `console`: where lines go (hetrun's stdout or stderr, never blocking; null = nowhere).
  /// `prefix`: put before every console line ("[rank 3] " or ""). `log_fd`: the rank's log file
  /// (-1 = none; written unprefixed). `tail_lines`: how many of the last lines to keep (0 =
  /// none). Nothing is owned.
  OutputTee(ConsoleSink* console, std::string prefix, int log_fd, size_t tail_lines);

  /// --log-format json: console lines become {"rank":R,"stream":STREAM,"msg":...} objects
  /// (hetrun/base/logging.h FormatWorkerLine); the prefix is not used. Log files stay raw.
  void WrapAsJson(int rank, std::string stream) {
    json_rank_ = rank;
    json_stream_ = std::move(stream);
  }

  /// Takes bytes as they come from the pipe; writes every completed line.
  void Consume(std::string_view bytes);

  /// End of stream: writes a last unterminated line, with a newline added.
  void Finish();

  /// The last kept lines, oldest first, without their newlines.
  std::vector<std::string> Tail() const;

  /// Lines that could not be written to the log file (a full disk), and the errno of the last.
  uint64_t log_lost_lines() const { return log_lost_lines_; }
  int log_error() const { return log_error_; }

 private:
  void EmitLine(std::string_view line);  // `line` includes its '\n'

  ConsoleSink* console_;
  std::string prefix_;
  int json_rank_ = -1;  ///< >= 0: wrap console lines as JSON
  std::string json_stream_;
  int log_fd_;
  size_t tail_lines_;
  std::string partial_;
  std::deque<std::string> tail_;
  uint64_t log_lost_lines_ = 0;
  int log_error_ = 0;
};

/// Writes all of `data` to the blocking `fd` (a log file), retrying on EINTR and short writes.
/// Returns 0, or the errno of a failed write (a full disk): losing a log line must not stop
/// supervision, but the caller counts it.
int WriteFully(int fd, std::string_view data);

}  // namespace hetrun::launcher
