#include "supervise/watchers/checkpoint_pointer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hetrun::launcher {

std::optional<std::string> ReadCheckpointPointer(const std::string& dir) {
  const std::string path = dir + "/" + kCheckpointPointer;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return std::nullopt;
  struct stat info {};
  std::optional<std::string> text;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode)) {
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n >= 0) text = std::string(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  if (!text) return std::nullopt;
  const size_t end = text->find_first_of("\r\n");
  if (end != std::string::npos) text->resize(end);
  return text;
}

std::string CheckpointPublishedSince(const std::string& dir,
                                     const std::optional<std::string>& before) {
  const std::string pointer = dir + "/" + kCheckpointPointer;
  const std::optional<std::string> now = ReadCheckpointPointer(dir);
  if (!now) return "no " + pointer + " (no checkpoint was published)";
  if (before && *now == *before) {
    return pointer + " still names " + (now->empty() ? "nothing" : "'" + *now + "'") +
           ", as when the attempt started (no worker of this attempt published a checkpoint)";
  }
  if (now->empty() || *now == "." || *now == ".." || now->find('/') != std::string::npos) {
    return pointer + " names '" + *now + "', not a sub-folder of " + dir;
  }
  const std::string metadata = dir + "/" + *now + "/.metadata";
  struct stat info {};
  if (::lstat(metadata.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) {
    return pointer + " names '" + *now + "', which is not complete (no " + metadata + ")";
  }
  return "";
}

}  // namespace hetrun::launcher
