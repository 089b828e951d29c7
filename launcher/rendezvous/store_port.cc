#include "rendezvous/store_port.h"

#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "rendezvous/port_holder.h"

namespace hetrun::launcher {
namespace {

constexpr int kBacklog = 2048;     // every worker of the node connects at start
constexpr int kFreePortTries = 8;  // port 0: a free port on the first address taken elsewhere

struct Address {
  sockaddr_storage addr{};
  socklen_t length = 0;
  std::string text;  ///< numeric
};

void SetPort(sockaddr_storage& addr, int port) {
  if (addr.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6&>(addr).sin6_port = htons(static_cast<uint16_t>(port));
  } else {
    reinterpret_cast<sockaddr_in&>(addr).sin_port = htons(static_cast<uint16_t>(port));
  }
}

int PortOf(int fd) {
  sockaddr_storage addr{};
  socklen_t length = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) return 0;
  return addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(addr).sin6_port)
                                    : ntohs(reinterpret_cast<sockaddr_in&>(addr).sin_port);
}

// Whether `fd` is bound to `a` at `port`.
bool BoundTo(int fd, Address a, int port) {
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return false;
  SetPort(a.addr, port);
  if (bound.ss_family != a.addr.ss_family) return false;
  if (bound.ss_family == AF_INET6) {
    const auto& x = reinterpret_cast<const sockaddr_in6&>(bound);
    const auto& y = reinterpret_cast<const sockaddr_in6&>(a.addr);
    return x.sin6_port == y.sin6_port && std::memcmp(&x.sin6_addr, &y.sin6_addr, 16) == 0;
  }
  const auto& x = reinterpret_cast<const sockaddr_in&>(bound);
  const auto& y = reinterpret_cast<const sockaddr_in&>(a.addr);
  return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
}

// host's addresses, each once; none when it does not resolve (the store then listens on every
// interface, as the multi-node store does).
std::vector<Address> Resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::vector<Address> addresses;
  if (int rc = ::getaddrinfo(host.c_str(), "0", &hints, &found); rc != 0) {
    spdlog::warn("getaddrinfo({}): {}", host, gai_strerror(rc));
    return addresses;
  }
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    Address address;
    std::memcpy(&address.addr, a->ai_addr, a->ai_addrlen);
    address.length = a->ai_addrlen;
    char text[NI_MAXHOST] = "?";
    ::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof(text), nullptr, 0, NI_NUMERICHOST);
    address.text = text;
    bool seen = false;
    for (const Address& other : addresses) seen = seen || other.text == address.text;
    if (!seen) addresses.push_back(address);
  }
  ::freeaddrinfo(found);
  return addresses;
}

// A socket bound to `a` at `port`, listening when `listening` (with SO_REUSEADDR, as c10d's
// own). A blocker has no SO_REUSEADDR: nobody else can bind the address while it is held.
UniqueFd BindAt(Address a, int port, bool listening, int* error) {
  SetPort(a.addr, port);
  UniqueFd fd(::socket(a.addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    *error = errno;
    return fd;
  }
  int one = 1;
  if (listening && ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    spdlog::warn("setsockopt(SO_REUSEADDR): {}", std::strerror(errno));
  }
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&a.addr), a.length) != 0 ||
      (listening && ::listen(fd.get(), kBacklog) != 0)) {
    *error = errno;
    fd.Reset();
  }
  return fd;
}

Status PortInUse(const std::string& host, const std::string& address, int port) {
  const std::string holder = DescribePortHolder(port);
  return FailedPreconditionError(
      "MASTER_PORT " + std::to_string(port) + " on " + address +
      (address == host ? "" : " (MASTER_ADDR " + host + ")") + " is already in use" +
      (holder.empty() ? "" : " by " + holder) +
      ": hetrun hosts the job's store on that port and started no worker (give another "
      "--master-port, 0 for a free one, or --standalone)");
}

// [::] (dual-stack), or 0.0.0.0 for a machine without IPv6.
Address AnyAddress(bool v6_available) {
  Address any;
  if (v6_available) {
    auto& v6 = reinterpret_cast<sockaddr_in6&>(any.addr);
    v6.sin6_family = AF_INET6;
    v6.sin6_addr = in6addr_any;
    any.length = sizeof(v6);
    any.text = "::";
  } else {
    auto& v4 = reinterpret_cast<sockaddr_in&>(any.addr);
    v4.sin_family = AF_INET;
    v4.sin_addr.s_addr = htonl(INADDR_ANY);
    any.length = sizeof(v4);
    any.text = "0.0.0.0";
  }
  return any;
}

// The store on every interface, at `port` (0: a free one).
Result<UniqueFd> ListenEverywhere(const std::string& host, int port) {
  int error = 0;
  UniqueFd fd = BindAt(AnyAddress(true), port, true, &error);
  if (!fd.valid() && error != EADDRINUSE) fd = BindAt(AnyAddress(false), port, true, &error);
  if (fd.valid()) return fd;
  if (error == EADDRINUSE) return PortInUse(host, "every interface", port);
  return ErrnoError("bind/listen", "port " + std::to_string(port) + " on every interface", error);
}

}  // namespace

void StorePort::Release() {
  listener_.Reset();
  blockers_.clear();
}

Result<StorePort> StorePort::Hold(const std::string& host, int port, StorePort preheld) {
  const std::vector<Address> addresses = Resolve(host);
  for (int attempt = 1;; ++attempt) {
    StorePort out;
    out.port_ = port;
    std::vector<bool> done(addresses.size(), false);
    for (size_t i = 0; i < addresses.size() && preheld.held(); ++i) {
      if (BoundTo(preheld.listen_fd(), addresses[i], port)) {
        out.listener_ = std::move(preheld.listener_);
        done[i] = true;
      }
    }
    bool retry = false;
    for (size_t i = 0; i < addresses.size() && !retry; ++i) {
      if (done[i]) continue;
      const bool listening = !out.listener_.valid();
      int error = 0;
      UniqueFd fd = BindAt(addresses[i], out.port_, listening, &error);
      if (!fd.valid() && error == EADDRINUSE) {
        if (port == 0 && attempt < kFreePortTries) {
          retry = true;
          continue;
        }
        return PortInUse(host, addresses[i].text, out.port_);
      }
      if (!fd.valid()) continue;  // not an address of this machine
      if (listening) {
        if (out.port_ == 0) out.port_ = PortOf(fd.get());
        out.listener_ = std::move(fd);
      } else {
        out.blockers_.push_back(std::move(fd));
      }
    }
    if (retry) continue;
    if (!out.listener_.valid()) {
      // The pre-held socket (a free port picked on 127.0.0.1) would make the wildcard bind fail
      // as "in use" by this very process: it gives the port up for the wildcard's socket.
      preheld.Release();
      HETRUN_ASSIGN_OR_RETURN(out.listener_, ListenEverywhere(host, out.port_));
      if (out.port_ == 0) out.port_ = PortOf(out.listener_.get());
      spdlog::warn(
          "MASTER_ADDR {} is not an address of this machine: the store listens on every "
          "interface, port {}",
          host, out.port_);
    }
    return out;
  }
}

}  // namespace hetrun::launcher
