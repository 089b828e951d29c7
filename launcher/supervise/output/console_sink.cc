#include "supervise/output/console_sink.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>

namespace hetrun::launcher {

ConsoleSink::ConsoleSink(int fd, std::string name, size_t buffer_bytes)
    : fd_(fd), name_(std::move(name)), capacity_(buffer_bytes) {
  if (fd < 0) return;
  struct stat info {};
  if (::fstat(fd, &info) != 0) return;  // written as it is; errors are counted
  if (S_ISFIFO(info.st_mode) || S_ISCHR(info.st_mode)) {
    std::string self = "/proc/self/fd/" + std::to_string(fd);
    int own = ::open(self.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_APPEND);
    if (own >= 0) {
      reopened_ = UniqueFd(own);
      fd_ = own;
      return;
    }
  }
  if (S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode)) {
    // No /proc (or a socket, which cannot be reopened): O_NONBLOCK on the shared description,
    // put back by the destructor.
    int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0 && (flags & O_NONBLOCK) == 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0) {
      restore_flags_ = flags;
    }
  }
}

ConsoleSink::~ConsoleSink() {
  if (restore_flags_ >= 0) (void)::fcntl(fd_, F_SETFL, restore_flags_);
}

void ConsoleSink::Drop(size_t lines, size_t bytes) {
  dropped_lines_ += lines;
  dropped_bytes_ += bytes;
}

void ConsoleSink::WriteFrom(const void* writer, std::string_view text, bool leaves_open) {
  if (open_writer_ != nullptr && open_writer_ != writer) WriteLine("\n");
  WriteLine(text);
  open_writer_ = leaves_open ? writer : nullptr;
}

void ConsoleSink::WriteLine(std::string_view line) {
  if (fd_ < 0 || line.empty()) return;
  if (broken_) {
    Drop(1, line.size());
    return;
  }
  if (!Pending()) {
    // Nothing queued: try the console directly, keep what it does not take.
    while (!line.empty()) {
      ssize_t n = ::write(fd_, line.data(), line.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      if (n < 0) {
        last_error_ = errno;
        if (errno == EPIPE || errno == EBADF) broken_ = true;
        Drop(1, line.size());  // ENOSPC, EIO: this line is lost, later ones may get through
        return;
      }
      line.remove_prefix(static_cast<size_t>(n));
    }
    if (line.empty()) return;
    buffer_.clear();
    offset_ = 0;
  }
  if (buffer_.size() - offset_ + line.size() > capacity_) {
    Drop(1, line.size());
    return;
  }
  if (offset_ > 0 && offset_ >= buffer_.size() / 2) {
    buffer_.erase(0, offset_);  // compact now and then: amortised linear
    offset_ = 0;
  }
  buffer_.append(line);
}

void ConsoleSink::Flush() {
  while (Pending()) {
    ssize_t n = ::write(fd_, buffer_.data() + offset_, buffer_.size() - offset_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n < 0) {
      last_error_ = errno;
      broken_ = errno == EPIPE || errno == EBADF;
      // The queued bytes are lost; count their lines.
      size_t lines = 0;
      for (size_t i = offset_; i < buffer_.size(); ++i) lines += buffer_[i] == '\n';
      Drop(lines, buffer_.size() - offset_);
      buffer_.clear();
      offset_ = 0;
      return;
    }
    offset_ += static_cast<size_t>(n);
  }
  buffer_.clear();
  offset_ = 0;
}

void ConsoleSink::FlushFor(int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (Pending()) {
    Flush();
    if (!Pending()) break;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd pfd{fd_, POLLOUT, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
  }
  if (Pending()) {
    size_t lines = 0;
    for (size_t i = offset_; i < buffer_.size(); ++i) lines += buffer_[i] == '\n';
    Drop(lines, buffer_.size() - offset_);
    buffer_.clear();
    offset_ = 0;
  }
}

}  // namespace hetrun::launcher
