#include "hetrun/base/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace hetrun {
namespace {

// Writes all of `text` to `fd` (write(2) may write less than asked).
Status WriteAll(int fd, std::string_view text, const std::string& path) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("write", path, errno);
    if (n == 0) return ErrnoError("write", path, ENOSPC);
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view text, std::string_view what,
                           unsigned mode) {
  const std::string temporary = path + ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  static_cast<mode_t>(mode));
  if (fd < 0) return ErrnoError("open", temporary, errno).WithContext(std::string(what));
  Status written = WriteAll(fd, text, temporary);
  if (::close(fd) != 0 && written.ok()) written = ErrnoError("close", temporary, errno);
  if (written.ok() && ::rename(temporary.c_str(), path.c_str()) != 0) {
    written = ErrnoError("rename", temporary + " to " + path, errno);
  }
  if (!written.ok()) {
    ::unlink(temporary.c_str());  // best effort: the error above is what the caller sees
    return written.WithContext(std::string(what));
  }
  return Status::Ok();
}

}  // namespace hetrun
