// Where worker output lines go on their way to hetrun's stdout or stderr, without ever blocking
// the supervisor (issue 15, item 3): writes are non-blocking; what the reader cannot take yet
// waits in a bounded buffer, flushed when poll says the console is writable; a line that does
// not fit in the buffer is dropped whole and counted. A slow or stopped reader (a full pipe)
// then costs lines, never the supervisor's promptness on signals, reaping or the grace deadline.
//
// Non-blocking without touching anyone else's file description: a pipe, FIFO or terminal is
// reopened through /proc/self/fd/N (a new open file description of the same pipe, so O_NONBLOCK
// is ours alone); a socket gets O_NONBLOCK set and restored. Regular files (and /dev/null) never
// block on a full reader and are written as they are; their errors (a full disk) are counted too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "supervise/unique_fd.h"

namespace hetrun::launcher {

class ConsoleSink {
 public:
  /// Bytes kept for a reader that is behind; beyond this, whole lines are dropped.
  static constexpr size_t kDefaultBufferBytes = size_t{4} << 20;

  /// `fd`: hetrun's 1 or 2 (not owned; -1 = nowhere). `name`: "stdout" for messages.
  ConsoleSink(int fd, std::string name, size_t buffer_bytes = kDefaultBufferBytes);
  ~ConsoleSink();
  ConsoleSink(const ConsoleSink&) = delete;
  ConsoleSink& operator=(const ConsoleSink&) = delete;

  /// Writes one whole line (with its '\n') now, or queues it, or drops it when the buffer is
  /// full. Never blocks.
  void WriteLine(std::string_view line);

  /// WriteLine for `writer` (an OutputTee, one per rank and stream), ending first, with a newline,
  /// a line another writer left open, so no rank's text lands inside another's line.
  /// `leaves_open`: `text` does not end its line (a quiet partial line, a '\r' progress
  /// segment); `writer` then holds the console's line until someone writes.
  void WriteFrom(const void* writer, std::string_view text, bool leaves_open);
  /// Whether `writer`'s last write left the line open and nobody else has written since: only
  /// then does the rest of its line follow without a new prefix.
  bool HoldsOpenLine(const void* writer) const { return open_writer_ == writer; }
  /// `writer`'s stream ended: it holds the line no more.
  void Forget(const void* writer) {
    if (open_writer_ == writer) open_writer_ = nullptr;
  }

  /// The fd to poll for POLLOUT while Pending(); -1 when none.
  int poll_fd() const { return fd_; }
  bool Pending() const { return offset_ < buffer_.size(); }

  /// Writes what the console takes now (after POLLOUT). Never blocks.
  void Flush();

  /// Flushes until the buffer is empty or `timeout_ms` passed (end of supervision); what is
  /// left is counted as dropped.
  void FlushFor(int timeout_ms);

  uint64_t dropped_lines() const { return dropped_lines_; }
  uint64_t dropped_bytes() const { return dropped_bytes_; }
  const std::string& name() const { return name_; }
  /// The errno of the last failed write (EPIPE, ENOSPC ...), 0 when none.
  int last_error() const { return last_error_; }

 private:
  void Drop(size_t lines, size_t bytes);

  int fd_ = -1;             ///< what we write to: reopened_ or the caller's fd
  UniqueFd reopened_;       ///< our own non-blocking description, when the console allowed it
  int restore_flags_ = -1;  ///< the fd's flags to put back (sockets), -1 when untouched
  std::string name_;
  size_t capacity_;
  std::string buffer_;  ///< queued bytes; [offset_, size) still to write
  size_t offset_ = 0;
  size_t queued_lines_ = 0;
  uint64_t dropped_lines_ = 0;
  uint64_t dropped_bytes_ = 0;
  int last_error_ = 0;
  bool broken_ = false;                ///< a write failed for good (EPIPE, EBADF): drop everything
  const void* open_writer_ = nullptr;  ///< whose text the console's current line ends with
};

}  // namespace hetrun::launcher
