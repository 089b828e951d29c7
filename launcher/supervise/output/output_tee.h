// One worker output stream (stdout or stderr) on its way to the console and the rank's log file.
// The console gets whole lines, so ranks never interleave mid-line, with a "[rank R] " prefix
// under --tee/--prefix-ranks; and, so progress bars show live, also a segment that ends in '\r'
// (at once) and a partial line after kQuietFlush without new bytes (the rest of that line then
// follows without a second prefix, unless another rank wrote meanwhile: the shared ConsoleSink
// then ended the open line first, and the rest comes prefixed on a line of its own). In JSON log
// mode such progress goes out at most once per kJsonProgressInterval (the latest state), whole
// lines at once. The log file gets the raw bytes as they come. The last lines (the last state of
// each) are kept for the termination log.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "supervise/output/console_sink.h"

namespace hetrun::launcher {

class OutputTee {
 public:
  using Clock = std::chrono::steady_clock;
  /// A partial line with no new bytes for this long goes to the console.
  static constexpr std::chrono::milliseconds kQuietFlush{100};
  /// JSON log mode: at most one progress record (a '\r' segment or a partial line) this often.
  static constexpr std::chrono::milliseconds kJsonProgressInterval{1000};
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

  /// Takes bytes as they come from the pipe (at `now`); writes every completed line and every
  /// '\r' segment (JSON mode: progress as its interval allows), and the raw bytes to the log.
  void Consume(std::string_view bytes, Clock::time_point now = Clock::now());

  /// Forwards what has waited long enough: a partial line quiet for kQuietFlush, JSON progress
  /// held back for its interval.
  void Tick(Clock::time_point now);

  /// When Tick has something to forward; nullopt when nothing waits.
  std::optional<Clock::time_point> NextTick() const;

  /// End of stream: writes a last unterminated line, with a newline added (console only).
  void Finish();

  /// The last kept lines, oldest first, without their newlines.
  std::vector<std::string> Tail() const;

  /// Lines that could not be written to the log file (a full disk), and the errno of the last.
  uint64_t log_lost_lines() const { return log_lost_lines_; }
  int log_error() const { return log_error_; }

 private:
  void EmitLine(std::string_view line);     // `line` includes its '\n'
  void EmitSegment(std::string_view text);  // a '\r' segment (with it) or a quiet partial line
  void EmitJsonProgress(std::string_view text, Clock::time_point now);
  void AddTail(std::string_view text);  // the current line's text, for the tail
  /// The console's line is still this line's start: its rest follows without a prefix.
  bool Continues() const { return continued_ && console_->HoldsOpenLine(this); }
  void KeepTail();  // the current line ends: keep its last state

  ConsoleSink* console_;
  std::string prefix_;
  int json_rank_ = -1;  ///< >= 0: wrap console lines as JSON
  std::string json_stream_;
  int log_fd_;
  size_t tail_lines_;
  std::string partial_;     ///< console bytes of the current segment not forwarded yet
  bool continued_ = false;  ///< the console has this line's start: no prefix for the rest
  Clock::time_point last_bytes_{};
  std::string tail_line_;     ///< the current line's text for the tail (its last '\r' segment)
  std::string tail_segment_;  ///< the last non-empty '\r' segment of the current line
  std::optional<std::string> held_progress_;  ///< JSON: the latest progress not yet shown
  std::optional<Clock::time_point> last_progress_;
  size_t shown_partial_ = 0;  ///< JSON: the size of partial_ when it last went out as progress
  std::deque<std::string> tail_;
  uint64_t log_lost_lines_ = 0;
  int log_error_ = 0;
};

/// Writes all of `data` to the blocking `fd` (a log file), retrying on EINTR and short writes.
/// Returns 0, or the errno of a failed write (a full disk): losing a log line must not stop
/// supervision, but the caller counts it.
int WriteFully(int fd, std::string_view data);

}  // namespace hetrun::launcher
