#include "rendezvous/listen_socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace hetrun::launcher {
namespace {

constexpr int kBacklog = 2048;  // every launcher and worker of a large job connects at start

}  // namespace

Result<int> ListenOnJobAddress(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::string service = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    spdlog::warn("getaddrinfo({}): {}; the rendezvous store listens on every interface", host,
                 gai_strerror(rc));
    return -1;
  }
  int last_error = 0;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_error = errno;
      continue;
    }
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
      spdlog::warn("setsockopt(SO_REUSEADDR): {}", std::strerror(errno));
    }
    if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, kBacklog) == 0) {
      freeaddrinfo(found);
      return fd;
    }
    last_error = errno;
    close(fd);
    if (last_error == EADDRINUSE) break;
  }
  freeaddrinfo(found);
  if (last_error == EADDRINUSE) {
    return UnavailableError("bind(" + host + ":" + service +
                            ") for the rendezvous store: " + std::strerror(last_error));
  }
  spdlog::warn(
      "bind({}:{}): {}: {} is not an address of this machine; the rendezvous store listens on "
      "every interface (limit who reaches it with a NetworkPolicy and HETRUN_JOB_SECRET)",
      host, service, std::strerror(last_error), host);
  return -1;
}

}  // namespace hetrun::launcher
