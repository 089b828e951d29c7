#include "hetrun/base/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace hetrun {
namespace {

std::string FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

Result<std::string> ReadRegularFile(const std::string& path, size_t max_bytes,
                                    std::string_view what) {
  const std::string name = std::string(what) + " " + path;
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return NotFoundError(name + ": no such file");
    return ErrnoError("open", name, err);
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError("fstat", name, err);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    return InvalidArgumentError(name + ": " + FileKind(info.st_mode) +
                                ", not a regular file; give a regular file");
  }
  auto too_large = [&] {
    return InvalidArgumentError(name + ": larger than " + std::to_string(max_bytes >> 10) +
                                " KiB, the limit for this input");
  };
  if (static_cast<uint64_t>(info.st_size) > max_bytes) {
    ::close(fd);
    return too_large();
  }
  std::string text;
  char buffer[65536];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return ErrnoError("read", name, err);
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > max_bytes) {  // the file grew while we read it
      ::close(fd);
      return too_large();
    }
  }
  ::close(fd);
  return text;
}

Status CheckJsonDepth(std::string_view text, size_t max_depth, std::string_view source) {
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        return InvalidArgumentError(std::string(source) + ": JSON nested deeper than " +
                                    std::to_string(max_depth) + " levels (byte " +
                                    std::to_string(i) + ")");
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return Status::Ok();
}

}  // namespace hetrun
