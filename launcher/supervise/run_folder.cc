#include "supervise/run_folder.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

namespace hetrun::launcher {
namespace {

namespace fs = std::filesystem;

constexpr const char* kLockName = ".lock";

// A failed call while making a run folder: a full disk (ENOSPC, EDQUOT) is the configuration
// (exit 78, naming the base), anything else the call's own error.
Status FolderError(std::string_view call, const std::string& path, const std::string& base,
                   int err) {
  Status error = ErrnoError(call, path, err);
  if (err != ENOSPC && err != EDQUOT) return error;
  return InvalidArgumentError("run folder base " + base + ": the disk is full (" + error.message() +
                              "); free space there or set HETRUN_RUN_BASE");
}

// Creates `base` (0700) when missing; refuses one that is a symlink or belongs to another user
// (a shared /tmp must not let someone else choose where hetrun writes).
Status PrepareBase(const std::string& base) {
  if (::mkdir(base.c_str(), 0700) != 0 && errno != EEXIST) {
    std::error_code error;
    fs::create_directories(base, error);
    if (error) return FolderError("mkdir", base + " (HETRUN_RUN_BASE)", base, error.value());
  }
  struct stat info {};
  if (::lstat(base.c_str(), &info) != 0) return ErrnoError("lstat", base, errno);
  if (!S_ISDIR(info.st_mode)) {
    return InvalidArgumentError("run folder base " + base +
                                " is not a directory (a symlink?); set HETRUN_RUN_BASE");
  }
  if (info.st_uid != ::geteuid()) {
    return InvalidArgumentError("run folder base " + base + " belongs to uid " +
                                std::to_string(info.st_uid) + ", not to this user (" +
                                std::to_string(::geteuid()) + "); set HETRUN_RUN_BASE");
  }
  return Status::Ok();
}

// True when `dir`'s lock can be taken and its lock file is still linked: its hetrun is gone.
// A RunFolder removes its folder (lock file included) before it lets go of the lock, so a lock
// taken on an unlinked file means the folder was just removed by its own hetrun, not left behind.
bool IsStale(const std::string& dir) {
  std::string lock = dir + "/" + kLockName;
  int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;  // being created or removed right now (or not ours): leave it
  UniqueFd owned(fd);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) return false;
  struct stat info {};
  if (::fstat(fd, &info) != 0) return false;
  return info.st_nlink > 0;
}

}  // namespace

std::string RunFolderBase(const Environment& env) {
  if (std::optional<std::string> base = env.Get("HETRUN_RUN_BASE"); base && !base->empty()) {
    return *base;
  }
  std::string tmp = env.Get("TMPDIR").value_or("");
  if (tmp.empty()) tmp = "/tmp";
  return tmp + "/hetrun-" + std::to_string(::geteuid());
}

int RemoveStaleRunFolders(const std::string& base) {
  int removed = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(base, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("run-") || !entry.is_directory(error) || entry.is_symlink(error)) {
      continue;
    }
    if (!IsStale(entry.path().string())) continue;
    std::error_code remove_error;
    const std::uintmax_t entries = fs::remove_all(entry.path(), remove_error);
    if (remove_error) {
      spdlog::warn("stale run folder {}: {}", entry.path().string(), remove_error.message());
      continue;
    }
    if (entries == 0) continue;  // gone in between: removed by someone else
    spdlog::info("removed the run folder {} of a hetrun that did not clean up (killed?)",
                 entry.path().string());
    ++removed;
  }
  return removed;
}

Result<std::unique_ptr<RunFolder>> RunFolder::Create(const std::string& base) {
  HETRUN_RETURN_IF_ERROR(PrepareBase(base));
  RemoveStaleRunFolders(base);
  // The lock is made and locked in `base` under a name the sweep ignores, and only then moved
  // into the new folder: a concurrent hetrun's sweep sees no lock (being created: left alone)
  // or a held one, never one it could take in between (it would remove the new folder).
  std::string held_lock = base + "/.lock-XXXXXX";
  int fd = ::mkostemp(held_lock.data(), O_CLOEXEC);
  if (fd < 0) return FolderError("mkostemp", held_lock, base, errno).WithContext("run folder lock");
  UniqueFd held(fd);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    Status error = ErrnoError("flock", held_lock, errno).WithContext("run folder lock");
    ::unlink(held_lock.c_str());
    return error;
  }
  std::string pattern = base + "/run-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) {
    Status error = FolderError("mkdtemp", pattern, base, errno);
    ::unlink(held_lock.c_str());
    return error;
  }
  const std::string lock = pattern + "/" + kLockName;
  if (::rename(held_lock.c_str(), lock.c_str()) != 0) {
    Status error = ErrnoError("rename", held_lock + " -> " + lock, errno);
    ::unlink(held_lock.c_str());
    ::rmdir(pattern.c_str());
    return error.WithContext("run folder lock");
  }
  spdlog::debug("run folder {}", pattern);
  return std::unique_ptr<RunFolder>(new RunFolder(pattern, std::move(held)));
}

RunFolder::~RunFolder() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

Result<std::string> RunFolder::MakeDir(const std::string& relative) const {
  std::string dir = path_ + "/" + relative;
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) return ErrnoError("mkdir", dir, error.value()).WithContext("run folder");
  return dir;
}

}  // namespace hetrun::launcher
