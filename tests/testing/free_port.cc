#include "free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>

namespace hetrun::testing {

namespace {

[[noreturn]] void Die(const char* call) {
  std::perror(call);
  std::abort();
}

// True when `port` (0: any) binds on 127.0.0.1 now; the bound port in *bound.
bool Binds(int port, int* bound) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) Die("FreePort: socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  if (!ok && port == 0) Die("FreePort: bind");
  socklen_t len = sizeof(addr);
  if (ok && ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Die("FreePort: getsockname");
  }
  ::close(fd);
  *bound = ntohs(addr.sin_port);
  return ok;
}

}  // namespace

int FreePort() {
  // Below Linux's ephemeral range (32768-60999 by default): the kernel never hands these out as
  // the source port of an outgoing connection, so the many connections of parallel tests (Gloo,
  // TCPStore clients) cannot take the port between this call and the listener's bind.
  thread_local std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32767);
  int bound = 0;
  for (int attempt = 0; attempt < 64; ++attempt) {
    if (Binds(pick(random), &bound)) return bound;
  }
  Binds(0, &bound);
  return bound;
}

}  // namespace hetrun::testing
