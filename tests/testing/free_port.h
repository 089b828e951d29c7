// A loopback TCP port for a test's store or rendezvous (tests run in parallel, so never a fixed
// port).
#pragma once

namespace hetrun::testing {

/// A port on 127.0.0.1 that nobody listens on at the time of the call: binds port 0, reads the
/// port the kernel chose, closes. A failing system call aborts the test program naming it.
int FreePort();

}  // namespace hetrun::testing
