#include "supervise/private_dir.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace hetrun::launcher {

Status MakePrivateDir(const std::string& dir, std::string_view what) {
  if (::mkdir(dir.c_str(), 0700) == 0) return Status::Ok();
  if (errno != EEXIST) return ErrnoError("mkdir", dir, errno).WithContext(std::string(what));
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR) {
      return InvalidArgumentError(std::string(what) + ": " + dir +
                                  " exists and is not a directory (a symlink?)");
    }
    return ErrnoError("open", dir, errno).WithContext(std::string(what));
  }
  struct stat info {};
  Status status = Status::Ok();
  if (::fstat(fd, &info) != 0) {
    status = ErrnoError("fstat", dir, errno).WithContext(std::string(what));
  } else if (info.st_uid != ::geteuid()) {
    status = InvalidArgumentError(std::string(what) + ": " + dir + " belongs to uid " +
                                  std::to_string(info.st_uid) + ", not to this user (" +
                                  std::to_string(::geteuid()) + ")");
  } else if ((info.st_mode & 077) != 0 && ::fchmod(fd, 0700) != 0) {
    status = ErrnoError("fchmod", dir, errno).WithContext(std::string(what));
  }
  ::close(fd);
  return status;
}

Status MakePrivateDirs(const std::string& existing, const std::string& dir, std::string_view what) {
  if (!dir.starts_with(existing)) {
    return InternalError(dir + " is not below " + existing);
  }
  for (size_t at = existing.size(); at < dir.size();) {
    size_t slash = dir.find('/', at + 1);
    if (slash == std::string::npos) slash = dir.size();
    if (slash > at + 1) HETRUN_RETURN_IF_ERROR(MakePrivateDir(dir.substr(0, slash), what));
    at = slash;
  }
  return Status::Ok();
}

}  // namespace hetrun::launcher
