#include "metrics/metrics_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hetrun/base/units.h"
#include "metrics/http_request.h"

namespace hetrun::launcher {

Result<MetricsAddress> ParseMetricsAddress(const std::string& text) {
  MetricsAddress address;
  std::string port = text;
  if (size_t colon = text.rfind(':'); colon != std::string::npos) {
    address.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (address.host == "localhost") address.host = "127.0.0.1";
    in_addr parsed{};
    if (::inet_pton(AF_INET, address.host.c_str(), &parsed) != 1) {
      return InvalidArgumentError("'" + address.host +
                                  "' is not an IPv4 address or localhost ([HOST:]PORT)");
    }
  }
  HETRUN_ASSIGN_OR_RETURN(int64_t number, ParseIntInRange(port, 0, 65535));
  address.port = static_cast<int>(number);
  return address;
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::Listen(const MetricsAddress& address,
                                                             std::function<std::string()> render) {
  std::string where = address.host + ":" + std::to_string(address.port) + " (--metrics-port)";
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoError("socket", where, errno);
  int one = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return ErrnoError("setsockopt(SO_REUSEADDR)", where, errno);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(address.port));
  if (::inet_pton(AF_INET, address.host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgumentError("--metrics-port: bad address " + where);
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    int error = errno;
    if (error == EADDRINUSE || error == EADDRNOTAVAIL || error == EACCES) {
      // A port taken or an address not on this host: the configuration, exit 78.
      return InvalidArgumentError("bind(" + where + "): " + std::strerror(error));
    }
    return ErrnoError("bind", where, error);
  }
  if (::listen(fd.get(), 16) != 0) return ErrnoError("listen", where, errno);
  socklen_t length = sizeof(addr);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    return ErrnoError("getsockname", where, errno);
  }
  int port = ntohs(addr.sin_port);
  UniqueFd timer(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!timer.valid()) return ErrnoError("timerfd_create", where, errno);
  return std::unique_ptr<MetricsServer>(
      new MetricsServer(std::move(fd), std::move(timer), port, std::move(render)));
}

void MetricsServer::ArmTimer() {
  itimerspec when{};  // zero: disarmed
  if (!connections_.empty()) {
    Clock::time_point earliest = connections_.front().deadline;
    for (const Connection& c : connections_) earliest = std::min(earliest, c.deadline);
    // steady_clock is CLOCK_MONOTONIC: the deadline is an absolute time on the timer's clock.
    auto since = std::chrono::duration_cast<std::chrono::nanoseconds>(earliest.time_since_epoch());
    when.it_value.tv_sec = static_cast<time_t>(since.count() / 1'000'000'000);
    when.it_value.tv_nsec = static_cast<long>(since.count() % 1'000'000'000);
    if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0) when.it_value.tv_nsec = 1;
  }
  if (::timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &when, nullptr) != 0) {
    spdlog::debug("metrics endpoint: timerfd_settime failed: {}", std::strerror(errno));
  }
}

void MetricsServer::AppendFds(std::vector<pollfd>* fds) {
  ArmTimer();
  fds->push_back({listen_.get(), POLLIN, 0});
  fds->push_back({timer_.get(), POLLIN, 0});
  for (const Connection& connection : connections_) {
    short events = connection.phase == Phase::kResponding ? POLLOUT : POLLIN;
    fds->push_back({connection.fd.get(), events, 0});
  }
}

void MetricsServer::HandleReady(std::span<const pollfd> fds) {
  constexpr size_t kFirst = 2;  // the listening socket, the timer
  if (fds.size() > 1 && (fds[1].revents & POLLIN)) {
    uint64_t expirations = 0;  // read to clear it; the deadlines are checked below
    if (::read(timer_.get(), &expirations, sizeof expirations) < 0 && errno != EAGAIN) {
      spdlog::debug("metrics endpoint: timerfd read failed: {}", std::strerror(errno));
    }
  }
  Clock::time_point now = Clock::now();
  std::vector<Connection> kept;
  for (size_t i = 0; i < connections_.size(); ++i) {
    Connection& connection = connections_[i];
    short revents = i + kFirst < fds.size() ? fds[i + kFirst].revents : 0;
    bool open = true;
    if (revents & (POLLERR | POLLNVAL)) {
      open = false;
    } else if (revents != 0) {
      switch (connection.phase) {
        case Phase::kReading:
          open = Read(connection);
          break;
        case Phase::kResponding:
          open = Write(connection);
          break;
        case Phase::kDraining:
          open = Drain(connection);
          break;
      }
    }
    if (open && now >= connection.deadline) open = false;  // slow or idle: dropped
    if (open) kept.push_back(std::move(connection));
  }
  connections_ = std::move(kept);
  if (!fds.empty() && (fds[0].revents & POLLIN)) Accept();
}

void MetricsServer::Accept() {
  // A bounded number per turn: a flood of connections cannot hold the supervisor here.
  for (size_t i = 0; i < kMaxConnections; ++i) {
    int fd = ::accept4(listen_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        spdlog::debug("metrics endpoint: accept4 failed: {}", std::strerror(errno));
      }
      return;
    }
    if (connections_.size() >= kMaxConnections) connections_.erase(connections_.begin());
    Connection connection;
    connection.fd = UniqueFd(fd);
    connection.deadline = Clock::now() + kConnectionDeadline;
    connections_.push_back(std::move(connection));
  }
}

bool MetricsServer::Read(Connection& connection) {
  char buffer[4096];
  ssize_t n = ::recv(connection.fd.get(), buffer, sizeof(buffer), MSG_DONTWAIT);
  if (n == 0) return false;
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  connection.in.append(buffer, static_cast<size_t>(n));
  if (ParseRequestHead(connection.in).state == HeadState::kIncomplete) return true;
  Respond(connection);
  return Write(connection);
}

void MetricsServer::Respond(Connection& connection) {
  HeadResult request = ParseRequestHead(connection.in);
  std::string status = "200 OK";
  std::string body;
  std::string type = "text/plain; version=0.0.4; charset=utf-8";
  if (request.state != HeadState::kComplete) {
    status = "400 Bad Request";
    body = "bad request\n";
  } else if (request.head.method != "GET" && request.head.method != "HEAD") {
    status = "405 Method Not Allowed";
    body = "only GET /metrics\n";
  } else if (request.head.path != "/metrics") {
    status = "404 Not Found";
    body = "only /metrics\n";
  } else {
    body = render_();
  }
  connection.out = "HTTP/1.1 " + status + "\r\nContent-Type: " + type +
                   "\r\nContent-Length: " + std::to_string(body.size()) +
                   "\r\nConnection: close\r\n\r\n";
  if (request.head.method != "HEAD") connection.out += body;
  connection.in.clear();
  connection.phase = Phase::kResponding;
  ++served_;
}

bool MetricsServer::Write(Connection& connection) {
  while (connection.sent < connection.out.size()) {
    ssize_t n = ::send(connection.fd.get(), connection.out.data() + connection.sent,
                       connection.out.size() - connection.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    connection.sent += static_cast<size_t>(n);
  }
  // Answered: our FIN follows the answer; what the client still sends is read and dropped, so
  // the close that follows is not a reset.
  if (::shutdown(connection.fd.get(), SHUT_WR) != 0) return false;
  connection.phase = Phase::kDraining;
  return Drain(connection);
}

bool MetricsServer::Drain(Connection& connection) {
  char buffer[16 * 1024];
  for (int turn = 0; turn < 8; ++turn) {  // bounded per loop turn
    ssize_t n = ::recv(connection.fd.get(), buffer, sizeof buffer, MSG_DONTWAIT);
    if (n == 0) return false;  // the client closed: done
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    connection.drained += static_cast<size_t>(n);
    if (connection.drained > kMaxDrainBytes) return false;
  }
  return true;
}

}  // namespace hetrun::launcher
