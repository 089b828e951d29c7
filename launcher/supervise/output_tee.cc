#include "supervise/output_tee.h"

#include <unistd.h>

#include <cerrno>

#include "hetrun/base/logging.h"
#include "supervise/termination_log.h"

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

void OutputTee::Consume(std::string_view bytes) {
  while (!bytes.empty()) {
    size_t newline = bytes.find('\n');
    if (newline == std::string_view::npos) {
      size_t room = kMaxLineBytes - partial_.size();
      if (bytes.size() < room) {
        partial_.append(bytes);
        return;
      }
      partial_.append(bytes.substr(0, room));
      bytes.remove_prefix(room);
      partial_.push_back('\n');
      EmitLine(partial_);
      partial_.clear();
      continue;
    }
    if (partial_.empty()) {
      EmitLine(bytes.substr(0, newline + 1));
    } else {
      partial_.append(bytes.substr(0, newline + 1));
      EmitLine(partial_);
      partial_.clear();
    }
    bytes.remove_prefix(newline + 1);
  }
}

void OutputTee::Finish() {
  if (partial_.empty()) return;
  partial_.push_back('\n');
  EmitLine(partial_);
  partial_.clear();
}

std::vector<std::string> OutputTee::Tail() const {
  return {tail_.begin(), tail_.end()};
}

void OutputTee::EmitLine(std::string_view line) {
  if (console_ != nullptr) {
    if (json_rank_ >= 0) {
      std::string wrapped =
          FormatWorkerLine(json_rank_, json_stream_, line.substr(0, line.size() - 1));
      wrapped += '\n';
      console_->WriteLine(wrapped);
    } else if (prefix_.empty()) {
      console_->WriteLine(line);
    } else {
      // One line at a time so lines of different ranks never interleave.
      std::string prefixed;
      prefixed.reserve(prefix_.size() + line.size());
      prefixed.append(prefix_).append(line);
      console_->WriteLine(prefixed);
    }
  }
  if (log_fd_ >= 0) {
    if (int err = WriteFully(log_fd_, line); err != 0) {
      ++log_lost_lines_;
      log_error_ = err;
    }
  }
  if (tail_lines_ > 0) {
    std::string_view text = line.substr(0, line.size() - 1);
    tail_.emplace_back(TruncateUtf8(text, kMaxTailLineBytes));  // raw, but whole characters
    if (tail_.size() > tail_lines_) tail_.pop_front();
  }
}

}  // namespace hetrun::launcher
