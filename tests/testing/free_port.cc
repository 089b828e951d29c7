#include "free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <set>

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
  // A port handed out before is never handed out again by this process: a test that starts 16
  // hetruns at once asks for 16 ports before any of them is bound, and 16 random picks from
  // 12768 ports collide in about 1% of the batches.
  static std::mutex mutex;
  static std::set<int> given;
  std::lock_guard<std::mutex> lock(mutex);
  thread_local std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32767);
  int bound = 0;
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int port = pick(random);
    if (given.count(port) == 0 && Binds(port, &bound)) {
      given.insert(bound);
      return bound;
    }
  }
  Binds(0, &bound);
  return bound;
}

}  // namespace hetrun::testing
