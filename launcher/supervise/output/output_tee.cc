#include "supervise/output/output_tee.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "hetrun/base/logging.h"
#include "supervise/report/termination_log.h"

namespace hetrun::launcher {

int WriteFully(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

OutputTee::OutputTee(ConsoleSink* console, std::string prefix, int log_fd, size_t tail_lines)
    : console_(console), prefix_(std::move(prefix)), log_fd_(log_fd), tail_lines_(tail_lines) {}

void OutputTee::Consume(std::string_view bytes, Clock::time_point now) {
  if (log_fd_ >= 0 && !bytes.empty()) {
    if (int err = WriteFully(log_fd_, bytes); err != 0) {  // raw, as they came
      // Counted in lines, as the log's reader sees them (a piece without a newline is one).
      log_lost_lines_ += std::max<uint64_t>(1, std::count(bytes.begin(), bytes.end(), '\n'));
      log_error_ = err;
    }
  }
  while (!bytes.empty()) {
    size_t end = bytes.find_first_of("\r\n");
    if (end == std::string_view::npos) {
      size_t room = kMaxLineBytes - partial_.size();
      if (bytes.size() < room) {
        partial_.append(bytes);
        AddTail(bytes);
        last_bytes_ = now;
        return;
      }
      partial_.append(bytes.substr(0, room));
      AddTail(bytes.substr(0, room));
      bytes.remove_prefix(room);
      partial_.push_back('\n');
      EmitLine(partial_);
      continue;
    }
    std::string_view piece = bytes.substr(0, end + 1);
    bytes.remove_prefix(end + 1);
    partial_.append(piece);
    if (piece.back() == '\n') {
      AddTail(piece.substr(0, piece.size() - 1));
      EmitLine(partial_);
      continue;
    }
    // A '\r' segment: the line's new state (a progress bar), shown at once.
    std::string text = tail_line_ + std::string(piece.substr(0, piece.size() - 1));
    if (!text.empty()) tail_segment_ = TruncateUtf8(text, kMaxTailLineBytes + 4);
    tail_line_.clear();
    if (json_rank_ >= 0) {
      EmitJsonProgress(std::string_view(partial_).substr(0, partial_.size() - 1), now);
      partial_.clear();
    } else {
      EmitSegment(partial_);
      continued_ = false;  // the cursor is back at the line's start: the next text is prefixed
    }
    shown_partial_ = 0;
  }
}

void OutputTee::Tick(Clock::time_point now) {
  if (json_rank_ >= 0) {
    if (held_progress_ && now - *last_progress_ >= kJsonProgressInterval) {
      std::string text = std::move(*held_progress_);
      held_progress_.reset();
      EmitJsonProgress(text, now);
    }
    if (!partial_.empty() && partial_.size() != shown_partial_ &&
        now - last_bytes_ >= kQuietFlush) {
      shown_partial_ = partial_.size();
      EmitJsonProgress(partial_, now);  // a snapshot; the whole line still follows
    }
    return;
  }
  if (partial_.empty() || now - last_bytes_ < kQuietFlush) return;
  EmitSegment(partial_);
  continued_ = true;
}

std::optional<OutputTee::Clock::time_point> OutputTee::NextTick() const {
  std::optional<Clock::time_point> next;
  auto consider = [&next](Clock::time_point t) { next = next ? std::min(*next, t) : t; };
  const bool quiet_pending =
      !partial_.empty() && (json_rank_ < 0 || partial_.size() != shown_partial_);
  if (quiet_pending) {
    Clock::time_point t = last_bytes_ + kQuietFlush;
    if (json_rank_ >= 0 && last_progress_) t = std::max(t, *last_progress_ + kJsonProgressInterval);
    consider(t);
  }
  if (held_progress_) consider(*last_progress_ + kJsonProgressInterval);
  return next;
}

void OutputTee::Finish() {
  if (!partial_.empty()) {
    partial_.push_back('\n');
    EmitLine(partial_);
  } else if (continued_ && console_ != nullptr && json_rank_ < 0 && console_->HoldsOpenLine(this)) {
    console_->WriteFrom(this, "\n", false);  // end the line its quiet part began
  }
  if (console_ != nullptr) console_->Forget(this);
  continued_ = false;
  if (!tail_line_.empty() || !tail_segment_.empty()) KeepTail();
}

std::vector<std::string> OutputTee::Tail() const {
  return {tail_.begin(), tail_.end()};
}

void OutputTee::EmitSegment(std::string_view text) {
  if (console_ != nullptr) {
    std::string out = Continues() ? std::string() : prefix_;
    out.append(text);
    console_->WriteFrom(this, out, true);
  }
  partial_.clear();
}

void OutputTee::EmitJsonProgress(std::string_view text, Clock::time_point now) {
  if (last_progress_ && now - *last_progress_ < kJsonProgressInterval) {
    held_progress_ = std::string(text);  // shown later (Tick) unless a newer state replaces it
    return;
  }
  held_progress_.reset();
  last_progress_ = now;
  if (console_ == nullptr) return;
  std::string wrapped = FormatWorkerLine(json_rank_, json_stream_, text);
  wrapped += '\n';
  console_->WriteFrom(this, wrapped, false);
}

void OutputTee::AddTail(std::string_view text) {
  // A few bytes beyond the cut, so TruncateUtf8 sees where the character at the cut ends.
  const size_t most = kMaxTailLineBytes + 4;
  if (tail_line_.size() < most) tail_line_.append(text.substr(0, most - tail_line_.size()));
}

void OutputTee::KeepTail() {
  std::string text = tail_line_;
  if (text.empty()) text = tail_segment_;  // a line that ended right after its last '\r'
  tail_line_.clear();
  tail_segment_.clear();
  if (tail_lines_ == 0) return;
  tail_.emplace_back(TruncateUtf8(text, kMaxTailLineBytes));  // raw, but whole characters
  if (tail_.size() > tail_lines_) tail_.pop_front();
}

void OutputTee::EmitLine(std::string_view line) {
  if (json_rank_ >= 0) held_progress_.reset();  // the whole line supersedes its progress
  if (console_ != nullptr) {
    if (json_rank_ >= 0) {
      std::string wrapped =
          FormatWorkerLine(json_rank_, json_stream_, line.substr(0, line.size() - 1));
      wrapped += '\n';
      console_->WriteFrom(this, wrapped, false);
    } else if (prefix_.empty() || Continues()) {
      console_->WriteFrom(this, line, false);
    } else {
      // One line at a time so lines of different ranks never interleave.
      std::string prefixed;
      prefixed.reserve(prefix_.size() + line.size());
      prefixed.append(prefix_).append(line);
      console_->WriteFrom(this, prefixed, false);
    }
  }
  continued_ = false;
  shown_partial_ = 0;
  KeepTail();
  partial_.clear();
}

}  // namespace hetrun::launcher
