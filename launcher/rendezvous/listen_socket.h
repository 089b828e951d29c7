// Node 0's listening socket for the rendezvous store, bound to the address the job uses
// (MASTER_ADDR) instead of every interface: libtorch's TCPStore takes it over
// (TCPStoreOptions::masterListenFd).
#pragma once

#include <string>

#include "hetrun/base/status.h"

namespace hetrun::launcher {

/// A listening TCP socket bound to `host`:`port` (close-on-exec). -1, with a warning, when `host`
/// is not an address of this machine (a Service IP or a name that resolves elsewhere): the store
/// then listens on every interface, as it did before. An error for a port already in use.
Result<int> ListenOnJobAddress(const std::string& host, int port);

}  // namespace hetrun::launcher
