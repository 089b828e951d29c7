// FindRendezvousLibrary and OpenTcpStore: find libhetrun_rendezvous.so, check the torch it needs,
// load it and call its entry point: for the multi-node rendezvous, and on one node on the store's
// own thread while the workers start (rendezvous/one_node_store.h), never on the launch's path.
#include <dlfcn.h>
#include <limits.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "rendezvous/rendezvous_api.h"

#ifndef HETRUN_BUILD_LIB_DIR
#define HETRUN_BUILD_LIB_DIR ""
#endif
#ifndef HETRUN_INSTALL_LIBDIR
#define HETRUN_INSTALL_LIBDIR "lib"
#endif

namespace hetrun::launcher {
namespace {

constexpr const char* kLibraryName = "libhetrun_rendezvous.so";

// $ORIGIN/../<libdir>, $ORIGIN/../lib (the installed layout and the build tree's bin/ + lib/),
// the wheel's site-packages/hetrun beside its bin/, then the build tree's lib dir compiled in
// (tests run binaries from other folders).
std::vector<std::filesystem::path> Candidates() {
  std::vector<std::filesystem::path> dirs;
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    std::filesystem::path bin = std::filesystem::path(self).parent_path();
#ifdef HETRUN_WHEEL_PYTHON_VERSION
    // pip puts scripts in <prefix>/bin and the package in <prefix>/lib/pythonX.Y/site-packages
    // (venv, --user, --prefix, conda); Debian's system pip uses dist-packages.
    for (const char* site : {"site-packages", "dist-packages"}) {
      dirs.push_back(bin.parent_path() / "lib" / ("python" HETRUN_WHEEL_PYTHON_VERSION) / site /
                     "hetrun");
    }
#endif
    dirs.push_back(bin.parent_path() / HETRUN_INSTALL_LIBDIR);
    dirs.push_back(bin.parent_path() / "lib");
  }
  if (std::string(HETRUN_BUILD_LIB_DIR).size() > 0) dirs.emplace_back(HETRUN_BUILD_LIB_DIR);
  std::vector<std::filesystem::path> files;
  for (const auto& dir : dirs) {
    std::filesystem::path file = dir / kLibraryName;
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
  }
  return files;
}

Result<OpenTcpStoreFn> LoadEntryPoint(const RendezvousLibrary& library) {
  static OpenTcpStoreFn cached = nullptr;
  if (cached != nullptr) return cached;
  // The torch that CheckPluginTorch read the version of: the plugin's libtorch_cpu.so and
  // libc10.so dependencies then resolve to it (by soname) whatever the plugin's RPATH finds.
  // RTLD_LOCAL: libtorch's symbols stay out of the launcher's namespace. Never closed: the
  // store's threads run library code until the process exits.
  const std::filesystem::path torch_cpu = library.torch_lib / "libtorch_cpu.so";
  if (dlopen(torch_cpu.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
    return FailedPreconditionError(std::string("dlopen(") + torch_cpu.string() + "): " + dlerror());
  }
  void* handle = dlopen(library.plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return FailedPreconditionError(std::string("dlopen(") + library.plugin.string() +
                                   "): " + dlerror());
  }
  void* symbol = dlsym(handle, kOpenTcpStoreSymbol);
  if (symbol == nullptr) {
    return FailedPreconditionError(std::string("dlsym(") + kOpenTcpStoreSymbol + ") in " +
                                   library.plugin.string() +
                                   ": not found (a library from another build?)");
  }
  spdlog::debug("rendezvous library {} with torch from {}", library.plugin.string(),
                library.torch_lib.string());
  cached = reinterpret_cast<OpenTcpStoreFn>(symbol);
  return cached;
}

}  // namespace

Result<RendezvousLibrary> FindRendezvousLibrary(const TorchDirLookup& lookup) {
  std::string tried;
  for (const std::filesystem::path& file : Candidates()) {
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) {
      tried += (tried.empty() ? "" : ", ") + file.string();
      continue;
    }
    HETRUN_ASSIGN_OR_RETURN(std::filesystem::path torch_lib, CheckPluginTorch(file, lookup));
    return RendezvousLibrary{file, torch_lib};
  }
  // The usual cause: `pip install .` with build isolation, whose build has no torch (issue 38).
  return FailedPreconditionError(
      std::string("multi-node jobs need ") + kLibraryName +
      " (built when libtorch is found), not found in: " + tried +
      "; to build it, in the environment that has torch: pip install scikit-build-core pybind11 "
      "&& pip install --no-build-isolation HETRUN_SOURCE (docs/how-to/install.md)");
}

namespace {
std::atomic<bool> abandoned_threads{false};
}  // namespace

void NoteAbandonedThread() {
  abandoned_threads = true;
}

bool HasAbandonedThreads() {
  return abandoned_threads.load();
}

Result<std::unique_ptr<Store>> OpenTcpStore(const StoreEndpoint& endpoint,
                                            const RendezvousLibrary& library) {
  HETRUN_ASSIGN_OR_RETURN(OpenTcpStoreFn open, LoadEntryPoint(library));
  Store* store = nullptr;
  std::string error;
  int code = open(&endpoint, &store, &error);
  if (code != 0 || store == nullptr) {
    return Status(code > 0 && code <= static_cast<int>(StatusCode::kInternal)
                      ? static_cast<StatusCode>(code)
                      : StatusCode::kInternal,
                  error.empty() ? "TCPStore could not be opened" : error);
  }
  return std::unique_ptr<Store>(store);
}

}  // namespace hetrun::launcher
