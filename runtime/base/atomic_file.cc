#include "hetrun/base/atomic_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
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

// A name nobody else can have chosen in advance: PATH.tmp.<pid>.<64 random bits>.
std::string TemporaryName(const std::string& path) {
  uint64_t bits = 0;
  if (::getrandom(&bits, sizeof bits, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bits)) {
    static uint64_t counter = 0;  // no entropy yet: O_EXCL below still refuses a planted name
    bits = (static_cast<uint64_t>(::getpid()) << 32) ^ ++counter;
  }
  char suffix[40];
  std::snprintf(suffix, sizeof suffix, ".tmp.%d.%016llx", static_cast<int>(::getpid()),
                static_cast<unsigned long long>(bits));
  return path + suffix;
}

// Creates a fresh temporary beside `path` (O_EXCL|O_NOFOLLOW: never an entry that exists, never
// through a symlink); a few tries when a name is taken.
Result<int> CreateTemporary(const std::string& path, unsigned mode, std::string* name) {
  for (int attempt = 0;; ++attempt) {
    *name = TemporaryName(path);
    int fd = ::open(name->c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    static_cast<mode_t>(mode));
    if (fd >= 0) return fd;
    if (errno != EEXIST || attempt == 8) return ErrnoError("open", *name, errno);
  }
}

// fsync of the folder that holds `path`, so the rename itself is durable. Filesystems that
// cannot sync a folder (EINVAL) are not an error.
Status SyncFolder(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open", folder, errno);
  Status synced = Status::Ok();
  if (::fsync(fd) != 0 && errno != EINVAL) synced = ErrnoError("fsync", folder, errno);
  ::close(fd);
  return synced;
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::string_view text, std::string_view what,
                           unsigned mode) {
  std::string temporary;
  Result<int> fd = CreateTemporary(path, mode, &temporary);
  if (!fd.ok()) return fd.status().WithContext(std::string(what));
  Status written = WriteAll(*fd, text, temporary);
  if (written.ok() && ::fsync(*fd) != 0) written = ErrnoError("fsync", temporary, errno);
  if (::close(*fd) != 0 && written.ok()) written = ErrnoError("close", temporary, errno);
  if (written.ok() && ::rename(temporary.c_str(), path.c_str()) != 0) {
    written = ErrnoError("rename", temporary + " to " + path, errno);
  }
  if (!written.ok()) {
    ::unlink(temporary.c_str());  // best effort: the error above is what the caller sees
    return written.WithContext(std::string(what));
  }
  return SyncFolder(path).WithContext(std::string(what));
}

}  // namespace hetrun
