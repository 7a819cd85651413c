// The raw port's scratch space for batched system calls: one Ethernet header
// per outgoing message (sent with the engine's datagram as a two-part
// gather), and the receive buffers, allocated once per port.
#pragma once

#include <linux/if_packet.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <array>
#include <cstdint>
#include <vector>

#include "port/raw_port.h"

namespace uroce::port {

inline constexpr std::size_t kRawMessagesPerCall = 32;

struct RawPort::Io {
  std::array<mmsghdr, kRawMessagesPerCall> send_messages{};
  std::array<std::array<iovec, 2>, kRawMessagesPerCall> send_iovs{};
  std::array<std::array<std::uint8_t, wire::kEthernetHeaderLength>, kRawMessagesPerCall> send_headers{};

  std::size_t frame_capacity = 0;  // the interface MTU plus a VLAN-tagged Ethernet header, rounded up
  std::array<mmsghdr, kRawMessagesPerCall> receive_messages{};
  std::array<iovec, kRawMessagesPerCall> receive_iovs{};
  std::array<sockaddr_ll, kRawMessagesPerCall> sources{};
  std::vector<std::uint8_t> receive_buffers;
  std::vector<ReceivedDatagram> received;

  void prepare(std::size_t mtu) {
    frame_capacity = (mtu + wire::kEthernetHeaderLength + wire::kVlanTagLength + 63) / 64 * 64;
    receive_buffers.assign(kRawMessagesPerCall * frame_capacity, 0);
    received.reserve(kRawMessagesPerCall);
  }
};

}  // namespace uroce::port
