// The /metrics endpoint of `hetrun run --metrics-port [HOST:]PORT`: one listening TCP socket and
// its connections, driven by the supervisor's poll loop (a PollParticipant), never blocking it.
// Bounded: at most kMaxConnections at once (the oldest is dropped for a new one), a request head
// of at most kMaxRequestHeadBytes, kConnectionDeadline per connection (enforced by a timerfd among
// the polled descriptors, so it holds however long the supervisor's loop would sleep), one
// response per connection (Connection: close). After the response the server shuts its side
// down and reads (discards) what the client still sends, up to kMaxDrainBytes, until the client
// closes or the deadline: closing with unread bytes would make the kernel send a reset, and the
// client could lose the answer. GET or HEAD /metrics answers 200 with the text that `render`
// returns at that moment; another path 404, another method 405, a malformed head 400.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hetrun/base/status.h"
#include "supervise/supervisor.h"
#include "supervise/unique_fd.h"

namespace hetrun::launcher {

/// `[HOST:]PORT` of --metrics-port: an IPv4 address or "localhost"; default host 0.0.0.0.
struct MetricsAddress {
  std::string host = "0.0.0.0";
  int port = 0;
};
Result<MetricsAddress> ParseMetricsAddress(const std::string& text);

class MetricsServer : public PollParticipant {
 public:
  static constexpr size_t kMaxConnections = 16;
  static constexpr std::chrono::milliseconds kConnectionDeadline{5000};
  static constexpr size_t kMaxDrainBytes = 1 << 20;

  /// Binds and listens (non-blocking); errors name the address and the failed call.
  static Result<std::unique_ptr<MetricsServer>> Listen(const MetricsAddress& address,
                                                       std::function<std::string()> render);

  int port() const { return port_; }
  void AppendFds(std::vector<pollfd>* fds) override;
  void HandleReady(std::span<const pollfd> fds) override;
  /// Requests answered so far (tests, logs).
  uint64_t served() const { return served_; }

 private:
  using Clock = std::chrono::steady_clock;
  enum class Phase { kReading, kResponding, kDraining };
  struct Connection {
    UniqueFd fd;
    std::string in;
    std::string out;
    size_t sent = 0;
    size_t drained = 0;
    Phase phase = Phase::kReading;
    Clock::time_point deadline;
  };

  MetricsServer(UniqueFd listen, UniqueFd timer, int port, std::function<std::string()> render)
      : listen_(std::move(listen)),
        timer_(std::move(timer)),
        port_(port),
        render_(std::move(render)) {}
  void Accept();
  /// Arms the timer for the earliest connection deadline (disarms it when there is none).
  void ArmTimer();
  /// false when the connection is finished (closed by the peer, failed, or drained).
  bool Read(Connection& connection);
  bool Write(Connection& connection);
  bool Drain(Connection& connection);
  void Respond(Connection& connection);

  UniqueFd listen_;
  UniqueFd timer_;  ///< timerfd: readable at the earliest connection deadline
  int port_;
  std::function<std::string()> render_;
  std::vector<Connection> connections_;
  uint64_t served_ = 0;
};

}  // namespace hetrun::launcher
