// The UDP port's scratch space for batched system calls: message headers,
// control buffers and the receive buffers, allocated once per port.
#pragma once

#include "port/loopback_receivers.h"
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <vector>

#include "port/udp_port.h"
#include "wire/ipv6.h"
#include "wire/udp.h"

namespace uroce::port {

// Room in front of each received payload for the rebuilt IP and UDP headers.
inline constexpr std::size_t kReceiveHeadroom = wire::kIpv6HeaderLength + wire::kUdpHeaderLength;
// The largest run we hand the kernel as one GSO send: a UDP datagram's
// length field is 16 bits. A receive buffer holds any UDP datagram, GRO's too.
inline constexpr std::size_t kLargestRun = 65535 - wire::kIpv6HeaderLength - wire::kUdpHeaderLength;
inline constexpr std::size_t kReceiveBufferPayload = 65536;
inline constexpr std::size_t kMaxSegmentsPerRun = 64;  // UDP_MAX_SEGMENTS in older kernels
inline constexpr std::size_t kMessagesPerCall = 32;
inline constexpr std::size_t kGroupDatagramsPerCall = 8;  // from each group's socket
// The TOS (IPv6: traffic class) every sending socket is given: ECT(0),
// DSCP 0. A datagram with another needs a control message.
inline constexpr int kSendSocketTos = 2;

// A socket address for an IPv4 (4-byte) or IPv6 (16-byte) address and port.
struct SocketAddress {
  sockaddr_storage storage{};
  socklen_t length = 0;
};
SocketAddress make_address(bool ipv4, const std::uint8_t* ip, std::uint16_t port);
// Whether an IPv4 (4-byte) or IPv6 (16-byte) address is loopback's: 127.0.0.0/8 or ::1.
bool is_loopback(const std::uint8_t* address, bool ipv4);

struct UdpPort::Io {
  // Sending. Towards loopback, the receiver's queue is asked first (loopback_receivers.h).
  LoopbackReceivers loopback_receivers;
  std::array<mmsghdr, kMessagesPerCall> send_messages{};
  std::array<SocketAddress, kMessagesPerCall> destinations{};
  // Control buffers hold cmsghdr structures: aligned for them.
  alignas(cmsghdr) std::array<std::array<char, CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(std::uint16_t))>,
                              kMessagesPerCall> send_controls{};
  std::vector<iovec> send_iovs = std::vector<iovec>(kMessagesPerCall * kMaxSegmentsPerRun);

  // Receiving: each message lands kReceiveHeadroom into its buffer, so the
  // first datagram of a run gets its headers rebuilt in place; the others are
  // copied into the arena, each with headroom of its own.
  std::array<mmsghdr, kMessagesPerCall> receive_messages{};
  std::array<iovec, kMessagesPerCall> receive_iovs{};
  std::array<sockaddr_storage, kMessagesPerCall> sources{};
  alignas(cmsghdr) std::array<std::array<char, 128>, kMessagesPerCall> receive_controls{};
  std::vector<std::uint8_t> receive_buffers = std::vector<std::uint8_t>(kMessagesPerCall * (kReceiveHeadroom + kReceiveBufferPayload));
  std::vector<std::uint8_t> arena;
  std::vector<ReceivedDatagram> received;
  // The headers are set up once; the kernel rewrites the lengths and flags
  // of the messages it fills, which are reset before the next call.
  bool receive_headers_ready = false;
  std::size_t receive_headers_used = 0;
  // How many messages the next recvmmsg asks for: one after a call that
  // found the socket empty (a ping-pong's next arrival is one message: a
  // second slot costs the kernel another look at an empty queue, on the
  // round trip's critical path), a full batch after one that found any.
  unsigned receive_batch = 1;
  void prepare_receive_headers();
  // Multicast arrivals, each at kReceiveHeadroom into a slot of its own;
  // allocated with the first group joined.
  std::vector<std::uint8_t> group_buffers;
  bool tos_in_every_send = false;  // a sending socket refused kSendSocketTos: every send names its TOS
  bool gso_refused = false;  // the kernel rejected a GSO send: send datagram by datagram from then on
};

}  // namespace uroce::port
