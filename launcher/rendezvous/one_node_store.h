// The c10d store hetrun hosts on one node (docs/ARCHITECTURE.md §2.4), as it does for several
// nodes and as torchrun's agent does: the workers connect to it as clients
// (TORCHELASTIC_USE_AGENT_STORE=True) instead of rank 0 binding MASTER_PORT after its imports.
//
// The port is held from the start (rendezvous/store_port.h); the libtorch part (dlopen of
// libtorch_cpu and the plugin, then c10d::TCPStore on the held socket through
// TCPStoreOptions::masterListenFd) comes up on a thread of its own while the workers start and
// import. Until it accepts, a worker's connection waits in the listening socket's backlog.
// Without the plugin or its torch, no store is hosted: the port is released just before the
// workers start and rank 0 binds it, as before (having been checked free).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "hetrun/base/status.h"
#include "rendezvous/plugin_torch.h"
#include "rendezvous/store_port.h"

namespace hetrun::launcher {

class OneNodeStore {
 public:
  OneNodeStore(std::string host, StorePort port);
  /// A server thread still inside libtorch (or dlopen) is left behind: the process must then end
  /// with _exit (NoteAbandonedThread).
  ~OneNodeStore();
  OneNodeStore(const OneNodeStore&) = delete;
  OneNodeStore& operator=(const OneNodeStore&) = delete;

  /// Finds the plugin and its torch (FindRendezvousLibrary with `lookup`) and starts the server
  /// thread: true, the workers get TORCHELASTIC_USE_AGENT_STORE=True. When they are not found,
  /// logs why, releases the port and returns false. Call once, right before the workers start.
  bool Start(const TorchDirLookup& lookup, bool library_warnings);

  /// Once the supervisor reads its signals from a signalfd: from then on a server that fails to
  /// come up raises SIGTERM (now, if it already failed), which stops the workers.
  void Arm();

  /// Why the server did not come up (its listening socket is then shut down, so connecting
  /// workers are refused); nullopt while it is coming up or up.
  std::optional<Status> Failure() const;

  int port() const { return port_number_; }

  struct Shared;  ///< between this object and the server thread (one_node_store.cc)

 private:
  std::string host_;
  int port_number_ = 0;
  std::shared_ptr<Shared> shared_;
};

}  // namespace hetrun::launcher
