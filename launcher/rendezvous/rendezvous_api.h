// The key-value store the launchers of a job meet in, as the launcher sees it: a small interface
// free of torch types. The production implementation is libtorch's c10d::TCPStore, compiled into
// libhetrun_rendezvous.so (launcher/rendezvous/) and loaded with dlopen: for the rendezvous when
// nnodes > 1, and on one node beside the workers (rendezvous/one_node_store.h). Tests implement
// it in memory.
//
// Node 0's launcher hosts the server at MASTER_ADDR:MASTER_PORT; every launcher (node 0 too) is a
// client; the workers reuse the same server (TORCHELASTIC_USE_AGENT_STORE=True) for
// init_process_group("env://"). The server thread runs in the hetrun process that forks the
// workers: children only exec right after fork.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "rendezvous/plugin_torch.h"

namespace hetrun::launcher {

/// One connection to the store. Not thread-safe: each thread uses its own Clone(). Errors are
/// values: a lost connection is kUnavailable, a timeout kDeadlineExceeded.
class Store {
 public:
  virtual ~Store() = default;

  virtual Status Set(const std::string& key, const std::string& value) = 0;
  /// The value of `key`; kNotFound when it is not set (never blocks).
  virtual Result<std::string> Get(const std::string& key) = 0;
  /// Sets `key` to `desired` when it is not set yet; returns the value it has afterwards (so the
  /// caller won when the result equals `desired`).
  virtual Result<std::string> SetIfAbsent(const std::string& key, const std::string& desired) = 0;
  /// Sets `key` to `desired` when its value is `expected` now; returns the value it has
  /// afterwards. (Replaces a record that failed authentication, exactly that one.)
  virtual Result<std::string> CompareSet(const std::string& key, const std::string& expected,
                                         const std::string& desired) = 0;
  /// Adds `delta` to the counter `key` (0 when absent) and returns the new value.
  virtual Result<int64_t> Add(const std::string& key, int64_t delta) = 0;
  /// Waits until every key is set; kDeadlineExceeded after `timeout`.
  virtual Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  /// Whether every key is set now.
  virtual Result<bool> Check(const std::vector<std::string>& keys) = 0;
  /// A second connection to the same store (for another thread).
  virtual Result<std::unique_ptr<Store>> Clone() = 0;
  /// Requests this connection has sent to the server so far (0 when not counted): the load
  /// `make bench` reports.
  virtual uint64_t RequestCount() const { return 0; }
};

/// Where to meet. `is_server`: this process hosts the store (node 0).
struct StoreEndpoint {
  std::string host;
  int port = 0;
  bool is_server = false;
  /// How long a client keeps retrying to connect (the server may start later).
  std::chrono::milliseconds connect_timeout{std::chrono::minutes(10)};
  /// Server only: a socket already bound to the job's address and listening (-1: let the store
  /// bind the port on every interface). The store takes it over.
  int listen_fd = -1;
  /// libtorch's own warnings (c10d logs one for every blocking wait that times out, and hetrun
  /// waits in slices): shown only when hetrun logs at debug level.
  bool library_warnings = false;
};

/// The C-linkage entry point of libhetrun_rendezvous.so, looked up with dlsym. The library and
/// the launcher come from the same build; the version in the name changes with this interface.
/// Returns a StatusCode (0 = ok) and sets *store or *error.
inline constexpr const char* kOpenTcpStoreSymbol = "hetrun_open_tcp_store_v2";
using OpenTcpStoreFn = int (*)(const StoreEndpoint* endpoint, Store** store, std::string* error);

/// The plugin to load and the lib/ folder of the torch it was checked against.
struct RendezvousLibrary {
  std::filesystem::path plugin;
  std::filesystem::path torch_lib;
};

/// Finds libhetrun_rendezvous.so (next to the binary: $ORIGIN/../lib; the build tree's lib dir;
/// for the wheel's launcher, site-packages/hetrun of the environment it is installed in) and
/// checks the torch it needs (rendezvous/plugin_torch.h; `lookup` asks the interpreter where
/// torch is when the record's folder holds none). Loads nothing. kFailedPrecondition (exit 78)
/// when the library is absent (a build without libtorch) or its torch release is not installed.
Result<RendezvousLibrary> FindRendezvousLibrary(const TorchDirLookup& lookup);

/// Loads the checked torch's libtorch_cpu.so (so the plugin binds to that one), then the plugin,
/// and opens a TCPStore connection (hosting the server when endpoint.is_server).
Result<std::unique_ptr<Store>> OpenTcpStore(const StoreEndpoint& endpoint,
                                            const RendezvousLibrary& library);

/// Records that a thread was left inside the store library (a call that never got an answer, a
/// connect cut short by a signal). Such a process must end with _exit after flushing its output:
/// running the libraries' exit handlers while that thread is inside libtorch (or inside dlopen)
/// can crash or hang the exit. main() checks HasAbandonedThreads().
void NoteAbandonedThread();
bool HasAbandonedThreads();

}  // namespace hetrun::launcher
