#include "supervise/report/termination_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace hetrun::launcher {

std::string TruncateUtf8(std::string_view reason, size_t max_bytes) {
  if (reason.size() <= max_bytes) return std::string(reason);
  size_t end = max_bytes;
  // Step back over continuation bytes (10xxxxxx) so the cut falls between characters.
  while (end > 0 && (static_cast<unsigned char>(reason[end]) & 0xC0) == 0x80) --end;
  return std::string(reason.substr(0, end));
}

Status WriteTerminationLog(const Environment& env, std::string_view reason) {
  std::optional<std::string> configured = env.Get("HETRUN_TERMINATION_LOG");
  std::string path = configured.value_or("/dev/termination-log");
  if (path.empty()) return Status::Ok();  // explicitly disabled
  int flags = O_WRONLY | O_TRUNC | O_CLOEXEC;
  if (configured) flags |= O_CREAT;
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    if (!configured && (errno == ENOENT || errno == EACCES || errno == EROFS)) return Status::Ok();
    return ErrnoError("open", path, errno).WithContext("termination log");
  }
  std::string text = TruncateUtf8(reason, kTerminationLogMaxBytes);
  size_t written = 0;
  while (written < text.size()) {
    ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return ErrnoError("write", path, err).WithContext("termination log");
    }
    written += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return ErrnoError("close", path, errno).WithContext("termination log");
  return Status::Ok();
}

}  // namespace hetrun::launcher
