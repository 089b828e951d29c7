// A loopback TCP port for a test's store or rendezvous (tests run in parallel, so never a fixed
// port).
#pragma once

namespace hetrun::testing {

/// A port on 127.0.0.1 that nobody listens on at the time of the call: a random port below the
/// kernel's ephemeral range that binds (else the one the kernel picks for port 0), closed again. A
/// failing system call aborts the test program naming it.
int FreePort();

}  // namespace hetrun::testing
