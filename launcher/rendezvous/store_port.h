// The port of the store hetrun hosts on one node (docs/ARCHITECTURE.md §2.4), bound before
// anything else runs: a port another job holds is refused before any worker starts (exit 78
// naming the port and its holder), and the port stays hetrun's while the workers import.
//
// MASTER_ADDR may name several addresses (localhost: 127.0.0.1 and ::1). The store listens on
// the first; every other one is bound too, without listening: a worker that tries it is refused
// and goes on to the next address, and no other job can take it (else a worker could join that
// job's store there).
#pragma once

#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "supervise/unique_fd.h"

namespace hetrun::launcher {

class StorePort {
 public:
  /// Binds `host`:`port` (port 0: a free port, the same on every address) and listens on its
  /// first address. `preheld`, when valid, is a listening socket already bound to one of host's
  /// addresses at `port` (--standalone's free port): it is kept for that address. When host is
  /// not an address of this machine the store listens on every interface (`preheld` is closed
  /// right before, so its own port is not found taken by itself). kFailedPrecondition
  /// (exit 78) naming the port, the address and the process holding it when it is taken.
  static Result<StorePort> Hold(const std::string& host, int port, StorePort preheld);

  StorePort() = default;
  StorePort(StorePort&&) = default;
  StorePort& operator=(StorePort&&) = default;

  int port() const { return port_; }
  bool held() const { return listener_.valid(); }
  /// The listening socket (-1 once released).
  int listen_fd() const { return listener_.get(); }
  /// Everything closed: rank 0 binds the port itself (no store hosted).
  void Release();

 private:
  UniqueFd listener_;
  std::vector<UniqueFd> blockers_;  ///< host's other addresses, bound, not listening
  int port_ = 0;
};

}  // namespace hetrun::launcher
