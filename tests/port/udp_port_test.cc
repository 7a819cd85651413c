// The UDP port's batched I/O: runs of datagrams handed to the kernel as one
// GSO send and merged again by GRO must come out of receive() as the same
// datagrams, in order, each with its own ECN bits, whatever the GSO policy;
// IPv6 too. The one exception: on loopback a Not-ECT datagram (an ACK)
// behind an ECT(0) one (a request) rides in its run and arrives ECT(0).
// Addresses are in 127.0.1.30-45 and ::1 on ports 19201-19217.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "port/loopback_receivers.h"
#include "port/udp_port.h"
#include "uroce/device.h"
#include "wire/ip_datagram.h"
#include "wire/ipv4.h"
#include "wire/ipv6.h"
#include "wire/udp.h"

namespace uroce::port {
namespace {

// A datagram with the description the engine would give it.
DescribedDatagram described(std::vector<std::uint8_t>& datagram) {
  auto transmit = wire::describe_transmit(datagram);
  return DescribedDatagram{datagram, transmit ? *transmit : Transmit{datagram.size()}};
}

bool is_ipv4_mapped(const Gid& gid) { return gid == gid_from_ipv4({gid[12], gid[13], gid[14], gid[15]}); }

struct Sent {
  std::size_t size;
  std::uint8_t ecn;
  std::uint8_t arrives_with_ecn = 0xFF;  // where GSO changes it: Not-ECT behind ECT(0) on loopback
  std::uint8_t expected_ecn() const { return arrives_with_ecn == 0xFF ? ecn : arrives_with_ecn; }
};

// An engine-style datagram from `from` to `to` (16-byte GIDs) with a payload
// whose bytes say which datagram it is.
std::vector<std::uint8_t> datagram(const Gid& from, const Gid& to, std::uint16_t source_port,
                                   std::uint16_t destination_port, const Sent& sent, std::size_t index) {
  bool ipv4 = is_ipv4_mapped(from);
  std::size_t ip_length = ipv4 ? wire::kIpv4HeaderLength : wire::kIpv6HeaderLength;
  std::vector<std::uint8_t> bytes(ip_length + wire::kUdpHeaderLength + sent.size);
  auto udp_length = static_cast<std::uint16_t>(wire::kUdpHeaderLength + sent.size);
  if (ipv4) {
    wire::Ipv4Repr ip;
    ip.ecn = static_cast<wire::Ecn>(sent.ecn);
    ip.dont_fragment = true;
    std::copy_n(from.begin() + 12, 4, ip.src.begin());
    std::copy_n(to.begin() + 12, 4, ip.dst.begin());
    ip.payload_length = udp_length;
    ip.emit(MutableByteSpan(bytes).first(ip_length));
  } else {
    wire::Ipv6Repr ip;
    ip.ecn = static_cast<wire::Ecn>(sent.ecn);
    ip.src = from;
    ip.dst = to;
    ip.payload_length = udp_length;
    ip.emit(MutableByteSpan(bytes).first(ip_length));
  }
  wire::UdpRepr udp;
  udp.src_port = source_port;
  udp.dst_port = destination_port;
  udp.payload_length = static_cast<std::uint16_t>(sent.size);
  udp.emit(MutableByteSpan(bytes).subspan(ip_length, wire::kUdpHeaderLength));
  for (std::size_t i = 0; i < sent.size; ++i) {
    bytes[ip_length + wire::kUdpHeaderLength + i] = static_cast<std::uint8_t>(index * 7 + i);
  }
  return bytes;
}

UdpPort open_port(const std::string& address, std::uint16_t port, UdpGsoPolicy gso) {
  UdpPortOptions options;
  options.port = port;
  options.gso = gso;
  auto opened = UdpPort::open(address, options);
  EXPECT_TRUE(opened) << (opened ? "" : opened.error());
  return std::move(*opened);
}

// Sends every datagram in one call and checks that each arrives whole, in order.
// Returns the sender's GSO sends.
std::uint64_t send_and_check(const std::string& from_address, const std::string& to_address, std::uint16_t port,
                             UdpGsoPolicy gso, const std::vector<Sent>& plan) {
  UdpPort sender = open_port(from_address, static_cast<std::uint16_t>(port + 1), gso);
  UdpPort receiver = open_port(to_address, port, gso);
  std::vector<std::vector<std::uint8_t>> datagrams;
  std::vector<DescribedDatagram> views;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    datagrams.push_back(datagram(sender.gid(), receiver.gid(), 0xC123, port, plan[i], i));
  }
  for (auto& d : datagrams) views.push_back(described(d));
  EXPECT_EQ(sender.send(views), views.size());

  std::size_t arrived = 0;
  auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (arrived < plan.size() && std::chrono::steady_clock::now() < give_up) {
    for (const ReceivedDatagram& got : receiver.receive(0)) {
      if (arrived == plan.size()) {
        ADD_FAILURE() << "more datagrams than were sent";
        break;
      }
      bool ipv4 = is_ipv4_mapped(receiver.gid());
      std::size_t ip_length = ipv4 ? wire::kIpv4HeaderLength : wire::kIpv6HeaderLength;
      const std::vector<std::uint8_t>& expected = datagrams[arrived];
      EXPECT_EQ(got.bytes.size(), expected.size()) << "datagram " << arrived;
      if (got.bytes.size() != expected.size()) return 0;
      // The payload, the UDP ports and the ECN bits are the sender's.
      EXPECT_TRUE(std::equal(got.bytes.begin() + static_cast<std::ptrdiff_t>(ip_length), got.bytes.end(),
                             expected.begin() + static_cast<std::ptrdiff_t>(ip_length)))
          << "datagram " << arrived;
      std::uint8_t ecn = ipv4 ? (got.bytes[1] & 3) : ((load_be16(got.bytes.data()) >> 4) & 3);
      EXPECT_EQ(ecn, gso == UdpGsoPolicy::never ? plan[arrived].ecn : plan[arrived].expected_ecn())
          << "datagram " << arrived;
      ++arrived;
    }
  }
  EXPECT_EQ(arrived, plan.size());
  if (gso == UdpGsoPolicy::never) {
    EXPECT_EQ(sender.counters().gso_sends, 0u);
  } else {  // the path under test really was the batched one
    EXPECT_GT(sender.counters().gso_sends, 0u);
    EXPECT_GT(receiver.counters().gro_receives, 0u);
  }
  return sender.counters().gso_sends;
}

// 40 full-sized datagrams, a shorter one, a CE-marked one in the middle of
// the next run, then small ones: several GSO runs and the ECN boundaries.
std::vector<Sent> mixed_plan() {
  std::vector<Sent> plan;
  for (int i = 0; i < 40; ++i) plan.push_back({4124, 2});
  plan.push_back({1000, 2});
  for (int i = 0; i < 10; ++i) plan.push_back({1500, static_cast<std::uint8_t>(i == 5 ? 3 : 2)});
  // The first small Not-ECT one ends the ECT(0) run before it, as an ACK
  // behind a request: on loopback it arrives ECT(0).
  plan.push_back({60, 0, 2});
  for (int i = 1; i < 5; ++i) plan.push_back({static_cast<std::size_t>(60 + i), 0});
  return plan;
}

TEST(UdpPort, BatchedRunsArriveAsTheSameDatagramsInOrder) {
  send_and_check("127.0.1.30", "127.0.1.31", 19201, UdpGsoPolicy::where_bytes_unchanged, mixed_plan());
}

TEST(UdpPort, WithoutGsoTheSameDatagramsArrive) {
  send_and_check("127.0.1.32", "127.0.1.33", 19201, UdpGsoPolicy::never, mixed_plan());
}

TEST(UdpPort, BatchedRunsOverIpv6) {
  send_and_check("::1", "::1", 19203, UdpGsoPolicy::where_bytes_unchanged, mixed_plan());
}

// A ping-pong's pong: a 2-byte WRITE (36 bytes of UDP payload, ECT(0)) and
// the bare ACK behind it (20 bytes, Not-ECT) go as one GSO send on loopback,
// so the peer takes both in one receive.
TEST(UdpPort, OnLoopbackTheAckBehindARequestGoesInTheSameSend) {
  EXPECT_EQ(send_and_check("127.0.1.35", "127.0.1.36", 19207, UdpGsoPolicy::where_bytes_unchanged, {{36, 2}, {20, 0, 2}}),
            1u);
  EXPECT_EQ(send_and_check("::1", "::1", 19209, UdpGsoPolicy::where_bytes_unchanged, {{36, 2}, {20, 0, 2}}), 1u);
}

// CE, ECT(1) and another DSCP each end a run, also on loopback.
TEST(UdpPort, OtherEcnDifferencesEndARun) {
  EXPECT_EQ(send_and_check("127.0.1.37", "127.0.1.38", 19211, UdpGsoPolicy::where_bytes_unchanged,
                           {{36, 2}, {36, 2}, {20, 3}, {20, 3}, {20, 1}, {20, 1}}),
            3u);
}

// The receive after one that found the socket empty asks for one message
// (a ping-pong's next arrival); the one after it for a full batch. Message
// headers are set up once and reused: each arrival still gets its own
// sender's address, whichever slot it lands in, round after round.
TEST(UdpPort, AfterAnEmptyReceiveOneMessageIsTakenThenTheRestInOneBatch) {
  UdpPort receiver = open_port("127.0.1.40", 19213, UdpGsoPolicy::never);
  UdpPort first = open_port("127.0.1.41", 19214, UdpGsoPolicy::never);
  UdpPort second = open_port("127.0.1.42", 19214, UdpGsoPolicy::never);
  auto send_from = [&](UdpPort& sender, std::size_t count) {
    std::vector<std::vector<std::uint8_t>> datagrams;
    std::vector<DescribedDatagram> views;
    for (std::size_t i = 0; i < count; ++i) {
      datagrams.push_back(datagram(sender.gid(), receiver.gid(), 0xC123, 19213, {100 + i, 2}, i));
    }
    for (auto& d : datagrams) views.push_back(described(d));
    ASSERT_EQ(sender.send(views), count);
  };
  auto sources_of = [](std::span<const ReceivedDatagram> got) {
    std::vector<int> last_bytes;
    for (const ReceivedDatagram& datagram : got) last_bytes.push_back(datagram.bytes[15]);  // IPv4 source, last byte
    return last_bytes;
  };
  EXPECT_TRUE(receiver.receive(0).empty());
  for (int round = 0; round < 3; ++round) {
    send_from(first, 3);
    send_from(second, 2);
    EXPECT_EQ(sources_of(receiver.receive(0)), (std::vector<int>{41})) << "round " << round;
    EXPECT_EQ(sources_of(receiver.receive(0)), (std::vector<int>{41, 41, 42, 42})) << "round " << round;
    EXPECT_TRUE(receiver.receive(0).empty()) << "round " << round;
  }
}

// A slot whose last message carried one control message (the TOS of a lone
// datagram) is given its whole control space again: the GRO run that lands
// there next still reports both its segment size and its TOS, and arrives
// as its datagrams with their ECN bits.
TEST(UdpPort, AReusedReceiveSlotStillReportsAGroRun) {
  UdpPort receiver = open_port("127.0.1.43", 19215, UdpGsoPolicy::where_bytes_unchanged);
  UdpPort sender = open_port("127.0.1.44", 19216, UdpGsoPolicy::where_bytes_unchanged);
  auto send = [&](std::size_t count) {
    std::vector<std::vector<std::uint8_t>> datagrams;
    std::vector<DescribedDatagram> views;
    for (std::size_t i = 0; i < count; ++i) {
      datagrams.push_back(datagram(sender.gid(), receiver.gid(), 0xC123, 19215, {300, 2}, i));
    }
    for (auto& d : datagrams) views.push_back(described(d));
    ASSERT_EQ(sender.send(views), count);
  };
  // Each arrival's size and ECN bits (ECT(0) as sent: 2).
  auto sizes_and_ecn_of = [](std::span<const ReceivedDatagram> got) {
    std::vector<std::pair<std::size_t, int>> arrivals;
    for (const ReceivedDatagram& datagram : got) arrivals.emplace_back(datagram.bytes.size(), datagram.bytes[1] & 3);
    return arrivals;
  };
  using Arrivals = std::vector<std::pair<std::size_t, int>>;
  constexpr std::size_t kWhole = wire::kIpv4HeaderLength + wire::kUdpHeaderLength + 300;
  for (int round = 0; round < 3; ++round) {
    send(1);
    EXPECT_EQ(sizes_and_ecn_of(receiver.receive(0)), (Arrivals{{kWhole, 2}})) << "round " << round;
    EXPECT_TRUE(receiver.receive(0).empty());
    send(3);
    EXPECT_EQ(sizes_and_ecn_of(receiver.receive(0)), (Arrivals{{kWhole, 2}, {kWhole, 2}, {kWhole, 2}}))
        << "round " << round;
    EXPECT_TRUE(receiver.receive(0).empty());
  }
  EXPECT_GT(receiver.counters().gro_receives, 0u);
}

TEST(UdpPort, MalformedDatagramsFromTheEngineAreCountedNotSent) {
  UdpPort sender = open_port("127.0.1.34", 19206, UdpGsoPolicy::always);
  std::vector<std::uint8_t> too_short(10);
  // What a bad description says: no UDP payload to send.
  std::vector<DescribedDatagram> views{DescribedDatagram{too_short, Transmit{too_short.size()}}};
  EXPECT_EQ(sender.send(views), 1u);
  EXPECT_EQ(sender.counters().send_errors, 1u);
}

}  // namespace
}  // namespace uroce::port

namespace uroce::port {
namespace {

// The receive buffer the kernel granted is known, and a user whose buffer
// was capped by net.core.rmem_max is told so, with the fix.
TEST(UdpPort, ReportsTheReceiveBufferItWasGrantedAndWhenItWasCapped) {
  auto port = UdpPort::open("127.0.1.45", UdpPortOptions{.port = 19217});
  ASSERT_TRUE(port.has_value()) << port.error();
  Port::ReceiveBuffer buffer = port->receive_buffer();
  EXPECT_EQ(buffer.wanted, std::size_t{8} << 20);
  EXPECT_GT(buffer.granted, 0u);
  if (::geteuid() == 0) {  // SO_RCVBUFFORCE lifts the cap for root
    EXPECT_GE(buffer.granted, buffer.wanted);
    EXPECT_EQ(receive_buffer_warning(buffer.granted, buffer.wanted), "");
  }
  std::string capped = receive_buffer_warning(208 * 1024, std::size_t{8} << 20);
  EXPECT_NE(capped.find("208 KiB, capped by net.core.rmem_max (8192 KiB wanted)"), std::string::npos) << capped;
  EXPECT_NE(capped.find("sysctl -w net.core.rmem_max=8388608"), std::string::npos) << capped;
  EXPECT_EQ(receive_buffer_warning(0, std::size_t{8} << 20), "");  // unknown: nothing to say
}

}  // namespace
}  // namespace uroce::port

namespace uroce::port {
namespace {

// A UDP socket on 127.0.1.host:port that never reads (a stopped receiver),
// with a 256 KiB receive buffer, and the kernel's view of its queue.
class StalledReceiver {
 public:
  StalledReceiver(std::uint8_t host, std::uint16_t port) : host_(host), port_(port) {
    fd_ = ::socket(AF_INET, SOCK_DGRAM, 0);
    int buffer = 256 << 10;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
    address_.sin_family = AF_INET;
    address_.sin_port = htons(port);
    address_.sin_addr.s_addr = htonl(0x7F000100u | host);
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&address_), sizeof address_) == 0;
  }
  ~StalledReceiver() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool bound() const { return bound_; }
  int fd() const { return fd_; }
  // None where the kernel does not answer sock_diag for UDP sockets.
  std::optional<LoopbackReceivers::Queue> queue() {
    return probe_.queue_of(reinterpret_cast<const std::uint8_t*>(&address_.sin_addr), true, port_);
  }
  // 400 datagrams of 4000 bytes from sender to this socket, and their views.
  void burst_from(const UdpPort& sender) {
    for (std::size_t i = 0; i < 400; ++i) {
      datagrams_.push_back(datagram(sender.gid(), gid_from_ipv4({127, 0, 1, host_}), 0xC123, port_, Sent{4000, 2}, i));
    }
    for (auto& d : datagrams_) views.push_back(described(d));
  }
  std::vector<DescribedDatagram> views;

 private:
  std::uint8_t host_;
  std::uint16_t port_;
  int fd_ = -1;
  bool bound_ = false;
  sockaddr_in address_{};
  LoopbackReceivers probe_;
  std::vector<std::vector<std::uint8_t>> datagrams_;
};

// A receiver on loopback that does not drain its socket: the port sends
// until its queue is half full, then holds the rest (back-pressure: send()
// takes fewer than offered) instead of letting the kernel drop them, as a
// paused port on a fabric would; once the receiver drains, the rest goes.
// The kernel's own view (sock_diag) is the oracle for how full it is.
TEST(UdpPort, AFullLoopbackReceiverIsWaitedForInsteadOfOverrun) {
  StalledReceiver receiver(46, 19218);
  ASSERT_TRUE(receiver.bound());
  auto empty = receiver.queue();
  if (!empty) GTEST_SKIP() << "the kernel does not answer sock_diag for UDP sockets here";
  EXPECT_EQ(empty->queued, 0u);

  UdpPort sender = open_port("127.0.1.47", 19219, UdpGsoPolicy::never);
  receiver.burst_from(sender);
  std::vector<DescribedDatagram>& views = receiver.views;
  std::size_t taken = 0;
  for (int call = 0; call < 50 && taken < views.size(); ++call) {
    taken += sender.send(std::span(views).subspan(taken));
  }
  ASSERT_LT(taken, views.size()) << "400 datagrams of 4000 bytes do not fit a 512 KiB queue";
  auto queue = receiver.queue();
  ASSERT_TRUE(queue);
  EXPECT_GT(queue->queued, queue->capacity / 2);
  EXPECT_GT(sender.counters().loopback_waits, 0u);

  // What the receiver holds is everything sent: nothing was dropped.
  std::vector<std::uint8_t> payload(65536);
  std::size_t received = 0;
  auto drain = [&] {
    while (::recv(receiver.fd(), payload.data(), payload.size(), MSG_DONTWAIT) > 0) ++received;
  };
  drain();
  EXPECT_EQ(received, taken);
  for (int call = 0; call < 400 && taken < views.size(); ++call) {
    taken += sender.send(std::span(views).subspan(taken));
    drain();
  }
  drain();
  EXPECT_EQ(taken, views.size());
  EXPECT_EQ(received, views.size());
}

// A loopback receiver that never drains (a stopped process) is waited for
// at most LoopbackReceivers::kLongestWait, and then not again while it stays
// full: the sender goes on, and the kernel drops what the receiver cannot
// take, as it did before the port waited at all.
TEST(UdpPort, AReceiverThatNeverDrainsIsWaitedForOnceAndOnlyBriefly) {
  StalledReceiver receiver(48, 19220);
  ASSERT_TRUE(receiver.bound());
  if (!receiver.queue()) GTEST_SKIP() << "the kernel does not answer sock_diag for UDP sockets here";
  UdpPort sender = open_port("127.0.1.49", 19221, UdpGsoPolicy::never);
  receiver.burst_from(sender);
  std::vector<DescribedDatagram>& views = receiver.views;
  auto start = std::chrono::steady_clock::now();
  std::size_t taken = sender.send(views);
  ASSERT_LT(taken, views.size());  // it waits
  while (taken < views.size() && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
    ::usleep(1000);
    taken += sender.send(std::span(views).subspan(taken));
  }
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(taken, views.size());  // then it gives up on that receiver
  EXPECT_GE(waited, std::chrono::nanoseconds(LoopbackReceivers::kLongestWait));
  std::uint64_t waits = sender.counters().loopback_waits;
  EXPECT_GT(waits, 0u);
  // Still full, and not waited for again.
  EXPECT_EQ(sender.send(views), views.size());
  EXPECT_EQ(sender.counters().loopback_waits, waits);
}

}  // namespace
}  // namespace uroce::port
