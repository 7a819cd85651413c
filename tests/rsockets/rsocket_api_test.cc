// uroce's rsockets (librdmacm's r* calls) called directly, for what rstream
// and riostream never do, with the errno a TCP socket gives: a second
// rlisten succeeds; a send after rshutdown(SHUT_WR) fails with EPIPE while
// the peer reads the data sent before it, then end of file, and can still
// send the other way; calls on an unknown descriptor fail with EBADF, on an
// unconnected socket with ENOTCONN, a non-blocking receive with nothing
// queued with EWOULDBLOCK; a connect to a port nobody listens on is refused
// (ECONNREFUSED) rather than left hanging; rpoll reports data as POLLIN.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

namespace {

sockaddr_in ipv4(const char* address, std::uint16_t port) {
  sockaddr_in out{};
  out.sin_family = AF_INET;
  out.sin_port = htons(port);
  ::inet_pton(AF_INET, address, &out.sin_addr);
  return out;
}

const sockaddr* as_address(const sockaddr_in& address) { return reinterpret_cast<const sockaddr*>(&address); }

// Each test its own device address (ctest runs them side by side, each in
// a process).
const char* address_for(const std::string& test) {
  if (test.find("Shutdown") != std::string::npos) return "127.0.9.121";
  if (test.find("Refused") != std::string::npos) return "127.0.9.122";
  if (test.find("Poll") != std::string::npos) return "127.0.9.123";
  return "127.0.9.124";
}

class RsocketApi : public ::testing::Test {
 protected:
  void SetUp() override {
    address_ = address_for(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ::setenv("UROCE_ADDRESS", address_, 1);
  }
  void TearDown() override {
    for (int fd : {client_, server_}) {
      if (fd >= 0) rclose(fd);
    }
  }
  // A connected pair on this test's address: client_ and server_.
  void connect_pair(std::uint16_t port) {
    int listener = rsocket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(listener, 0);
    sockaddr_in at = ipv4(address_, port);
    ASSERT_EQ(rbind(listener, as_address(at), sizeof(at)), 0);
    ASSERT_EQ(rlisten(listener, 1), 0);
    client_ = rsocket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(client_, 0);
    int connected = -1, connect_errno = 0;
    std::thread connector([&] {
      connected = rconnect(client_, as_address(at), sizeof(at));
      connect_errno = errno;
    });
    server_ = raccept(listener, nullptr, nullptr);
    connector.join();
    rclose(listener);
    ASSERT_GE(server_, 0) << std::strerror(errno);
    ASSERT_EQ(connected, 0) << std::strerror(connect_errno);
  }
  std::string receive(int fd, std::size_t length) {
    std::string out(length, '\0');
    ssize_t got = rrecv(fd, out.data(), length, MSG_WAITALL);
    out.resize(got < 0 ? 0 : static_cast<std::size_t>(got));
    return out;
  }
  const char* address_ = nullptr;
  int client_ = -1, server_ = -1;
};

TEST_F(RsocketApi, ASecondListenSucceeds) {
  int listener = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in at = ipv4(address_, 7410);
  ASSERT_EQ(rbind(listener, as_address(at), sizeof(at)), 0);
  EXPECT_EQ(rlisten(listener, 4), 0);
  EXPECT_EQ(rlisten(listener, 8), 0) << std::strerror(errno);
  EXPECT_EQ(rclose(listener), 0);
}

TEST_F(RsocketApi, UnknownDescriptorsUnconnectedSocketsAndEmptyReceivesFailWithTheirErrno) {
  char byte = 0;
  EXPECT_EQ(rsend(987654, &byte, 1, 0), -1);
  EXPECT_EQ(errno, EBADF);
  EXPECT_EQ(rclose(-1), -1);
  EXPECT_EQ(errno, EBADF);

  int fd = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(rsend(fd, &byte, 1, 0), -1);
  EXPECT_EQ(errno, ENOTCONN);
  EXPECT_EQ(rrecv(fd, &byte, 1, 0), -1);
  EXPECT_EQ(errno, ENOTCONN);
  EXPECT_EQ(rshutdown(fd, SHUT_WR), -1);
  EXPECT_EQ(errno, ENOTCONN);
  EXPECT_EQ(rclose(fd), 0);
  EXPECT_EQ(rsend(fd, &byte, 1, 0), -1);  // closed: no longer a descriptor
  EXPECT_EQ(errno, EBADF);

  connect_pair(7411);
  EXPECT_EQ(rrecv(server_, &byte, 1, MSG_DONTWAIT), -1);
  EXPECT_EQ(errno, EWOULDBLOCK);
}

TEST_F(RsocketApi, SendAfterShutdownForWritingFailsWithEpipeAndThePeerReadsEndOfFile) {
  connect_pair(7412);
  ASSERT_EQ(rsend(client_, "before", 6, 0), 6);
  ASSERT_EQ(rshutdown(client_, SHUT_WR), 0);
  EXPECT_EQ(rsend(client_, "after", 5, 0), -1);
  EXPECT_EQ(errno, EPIPE);

  EXPECT_EQ(receive(server_, 6), "before");
  char byte = 0;
  EXPECT_EQ(rrecv(server_, &byte, 1, 0), 0);  // end of file, not a hang

  // The other direction stays open (a half-close, as TCP's).
  ASSERT_EQ(rsend(server_, "reply", 5, 0), 5);
  EXPECT_EQ(receive(client_, 5), "reply");
}

TEST_F(RsocketApi, AConnectToAPortNobodyListensOnIsRefused) {
  int fd = rsocket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in nobody = ipv4(address_, 7413);
  EXPECT_EQ(rconnect(fd, as_address(nobody), sizeof(nobody)), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  EXPECT_EQ(rclose(fd), 0);
}

TEST_F(RsocketApi, PollReportsArrivedDataAsReadable) {
  connect_pair(7414);
  pollfd entry{server_, POLLIN, 0};
  EXPECT_EQ(rpoll(&entry, 1, 0), 0);  // nothing yet
  ASSERT_EQ(rsend(client_, "ping", 4, 0), 4);
  entry.revents = 0;
  ASSERT_EQ(rpoll(&entry, 1, 5000), 1);
  EXPECT_TRUE(entry.revents & POLLIN);
  EXPECT_EQ(receive(server_, 4), "ping");
}

}  // namespace
