// Who holds a TCP port on this machine, for the message of a port that is already taken
// (docs/ARCHITECTURE.md §2.4): the sockets bound to the port from /proc/net/tcp and
// /proc/net/tcp6 (this network namespace), then the process whose /proc/PID/fd links to one of
// them. Best effort: another user's processes cannot be read without privileges.
#pragma once

#include <string>

namespace hetrun::launcher {

/// "pid 123 (python3 -m torch.distributed.run ...)" for the process holding `port` (a listening
/// socket first); "a socket of uid 1000 (its process is not readable here)" when the socket is
/// found but not its process; "" when no socket on the port is found (or /proc is unreadable).
std::string DescribePortHolder(int port);

}  // namespace hetrun::launcher
