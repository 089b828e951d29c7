// The one-node store's port (launcher/rendezvous/store_port.h): held from the moment it is bound,
// a taken one refused naming the port and its holder, a pre-held socket kept.
#include "rendezvous/store_port.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "free_port.h"
#include "rendezvous/port_holder.h"

namespace hetrun::launcher {
namespace {

/// Whether another socket can bind `host`:`port` now (as another job's store would).
bool Bindable(const char* host, int port, int family = AF_INET) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_storage address{};
  socklen_t length = 0;
  if (family == AF_INET6) {
    auto& v6 = reinterpret_cast<sockaddr_in6&>(address);
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET6, host, &v6.sin6_addr);
    length = sizeof(v6);
  } else {
    auto& v4 = reinterpret_cast<sockaddr_in&>(address);
    v4.sin_family = AF_INET;
    v4.sin_port = htons(static_cast<uint16_t>(port));
    ::inet_pton(AF_INET, host, &v4.sin_addr);
    length = sizeof(v4);
  }
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), length) == 0;
  ::close(fd);
  return ok;
}

TEST(StorePortTest, PortZeroIsAFreePortHeldUntilReleased) {
  Result<StorePort> port = StorePort::Hold("127.0.0.1", 0, StorePort());
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  ASSERT_GT(port->port(), 0);
  EXPECT_TRUE(port->held());
  EXPECT_FALSE(Bindable("127.0.0.1", port->port())) << "nobody else binds it meanwhile";
  const int number = port->port();
  port->Release();
  EXPECT_FALSE(port->held());
  EXPECT_TRUE(Bindable("127.0.0.1", number)) << "released for rank 0";
}

TEST(StorePortTest, ATakenPortIsAConfigErrorNamingThePortAndThisProcess) {
  Result<StorePort> other = StorePort::Hold("127.0.0.1", testing::FreePort(), StorePort());
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  Result<StorePort> again = StorePort::Hold("127.0.0.1", other->port(), StorePort());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kFailedPrecondition);
  const std::string message = again.status().message();
  EXPECT_NE(message.find("MASTER_PORT " + std::to_string(other->port()) + " on 127.0.0.1"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("pid " + std::to_string(::getpid())), std::string::npos) << message;
  EXPECT_EQ(DescribePortHolder(other->port()).rfind("pid " + std::to_string(::getpid()), 0), 0u);
}

TEST(StorePortTest, APreheldSocketOnTheHostsAddressIsKept) {
  Result<StorePort> first = StorePort::Hold("127.0.0.1", 0, StorePort());
  ASSERT_TRUE(first.ok());
  const int fd = first->listen_fd();
  const int number = first->port();
  Result<StorePort> kept = StorePort::Hold("localhost", number, std::move(*first));
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->listen_fd(), fd) << "the same socket, never closed in between";
  EXPECT_EQ(kept->port(), number);
}

TEST(StorePortTest, AnAddressThatIsNotThisMachinesListensOnEveryInterface) {
  // 192.0.2.1 (TEST-NET-1) is never an address of this machine.
  Result<StorePort> port = StorePort::Hold("192.0.2.1", 0, StorePort());
  ASSERT_TRUE(port.ok()) << port.status().ToString();
  EXPECT_FALSE(Bindable("127.0.0.1", port->port()));
}

// Issue 39 item 9: --master-port 0 picks a free port on 127.0.0.1; with a MASTER_ADDR that is
// not this machine's, the wildcard bind found that port "in use by pid <hetrun's own pid>".
TEST(StorePortTest, AFreePortPickedLocallyMovesToEveryInterfaceForAForeignAddress) {
  Result<StorePort> picked = StorePort::Hold("127.0.0.1", 0, StorePort());
  ASSERT_TRUE(picked.ok());
  const int number = picked->port();
  Result<StorePort> moved = StorePort::Hold("192.0.2.1", number, std::move(*picked));
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(moved->port(), number);
  EXPECT_TRUE(moved->held());
  EXPECT_FALSE(Bindable("127.0.0.1", number)) << "still nobody else's";
}

}  // namespace
}  // namespace hetrun::launcher
