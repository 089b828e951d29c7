// The endpoint driven as the supervisor drives it: a loop that polls exactly the descriptors the
// server adds, with no timeout of its own (the supervisor's loop may sleep for a minute with
// quiet workers), so every deadline must come from the server's own descriptors.
#include "metrics/metrics_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <thread>

namespace hetrun::launcher {
namespace {

class ServerLoop {
 public:
  ServerLoop() {
    auto server = MetricsServer::Listen({"127.0.0.1", 0}, [] { return std::string("m 1\n"); });
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
    EXPECT_EQ(::pipe(wake_), 0);
    thread_ = std::thread([this] { Run(); });
  }
  ~ServerLoop() {
    stop_ = true;
    EXPECT_EQ(::write(wake_[1], "x", 1), 1);
    thread_.join();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }
  int port() const { return server_->port(); }

 private:
  void Run() {
    while (!stop_) {
      std::vector<pollfd> fds = {{wake_[0], POLLIN, 0}};
      server_->AppendFds(&fds);
      if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
      server_->HandleReady(std::span<const pollfd>(fds).subspan(1));
    }
  }
  std::unique_ptr<MetricsServer> server_;
  int wake_[2] = {-1, -1};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A client socket whose reads give up after `seconds` (EAGAIN): a bound, never the expectation.
int Connect(int port, int seconds) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  timeval limit{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  return fd;
}

// Everything until the end of the stream; `end` gets 0 (EOF) or the errno that ended it.
std::string ReadAll(int fd, int* end) {
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n > 0) {
      text.append(buffer, static_cast<size_t>(n));
      continue;
    }
    *end = n == 0 ? 0 : errno;
    return text;
  }
}

// Issue 28 item 13: the 5 s deadline was checked only when the supervisor's loop woke up, so a
// partial head stayed open (15 s with quiet workers; forever with an idle loop).
TEST(MetricsServerTest, APartialHeadIsClosedAtItsDeadlineWithoutAnyOtherWakeUp) {
  ServerLoop loop;
  int fd = Connect(loop.port(), 60);  // the deadline is 5 s; 60 s only bounds a failing test
  ASSERT_GT(::send(fd, "GET /met", 8, MSG_NOSIGNAL), 0);
  int end = -1;
  std::string answer = ReadAll(fd, &end);
  EXPECT_NE(end, EAGAIN) << "still open after 60 s: the deadline was not enforced";
  EXPECT_TRUE(end == 0 || end == ECONNRESET) << end;
  ::close(fd);
}

// Issue 28 item 13: the server closed with the request's unread bytes in its buffer, so the
// kernel sent a reset and the client got ECONNRESET instead of the documented answer.
TEST(MetricsServerTest, UnreadRequestBytesAreDrainedSoTheClientGetsTheAnswerAndAnEnd) {
  ServerLoop loop;
  struct Case {
    std::string request;
    std::string status;
  };
  const std::string body(60'000, 'b');
  for (const Case& c : {
           Case{"POST /metrics HTTP/1.1\r\nContent-Length: 60000\r\n\r\n" + body, "405"},
           Case{"GET /metrics HTTP/1.1\r\nContent-Length: 60000\r\n\r\n" + body, "200"},
           Case{std::string(20'000, 'x'), "400"},
       }) {
    SCOPED_TRACE(c.status);
    int fd = Connect(loop.port(), 60);
    ASSERT_EQ(::send(fd, c.request.data(), c.request.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(c.request.size()));
    int end = -1;
    std::string answer = ReadAll(fd, &end);
    EXPECT_EQ(answer.rfind("HTTP/1.1 " + c.status, 0), 0u) << answer.substr(0, 80);
    EXPECT_EQ(end, 0) << "the answer must end with the server's FIN, not a reset: " << end;
    ::close(fd);
  }
}

}  // namespace
}  // namespace hetrun::launcher
