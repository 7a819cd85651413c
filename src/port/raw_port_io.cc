// RawPort's batched frame I/O: sendmmsg of Ethernet header + engine datagram
// pairs to peers whose MAC address is known (the others wait for ARP; a
// link-local GID or an IPv4 group names its MAC itself), and recvmmsg of
// frames, which are checked for our address (IPv4, a group joined, or our
// IPv6 link-local GID), stripped of their Ethernet header and trimmed to
// their IP length.
#include <linux/if_packet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "uroce/monotonic_clock.h"
#include "port/link_local.h"
#include "port/raw_port_io.h"
#include "wire/ip_datagram.h"

namespace uroce::port {
namespace {

bool is_back_pressure(int error) { return error == EAGAIN || error == EWOULDBLOCK || error == ENOBUFS; }

// A described datagram's IPv4 destination, if it goes to one.
std::optional<Ipv4Address> ipv4_destination(const DescribedDatagram& datagram) {
  const Transmit& transmit = datagram.transmit;
  if (!transmit.ipv4 || transmit.udp_payload_offset == 0) return std::nullopt;
  const std::uint8_t* address = gid_address_bytes(transmit.destination, true);
  return Ipv4Address{address[0], address[1], address[2], address[3]};
}

// The MAC of an IPv6 datagram's link-local destination made of one (a GID 0).
std::optional<wire::MacAddress> link_local_destination(const DescribedDatagram& datagram) {
  const Transmit& transmit = datagram.transmit;
  if (transmit.ipv4 || transmit.udp_payload_offset == 0) return std::nullopt;
  return mac_of_link_local(transmit.destination);
}

}  // namespace

std::size_t RawPort::send(std::span<const DescribedDatagram> datagrams) {
  Io& io = *io_;
  std::size_t taken = 0;
  while (taken < datagrams.size()) {
    // The head cannot go now: neither IPv4 nor to a link-local GID (dropped)
    // or its IPv4 peer not resolved (held). A link-local GID names its MAC.
    std::optional<Ipv4Address> head = ipv4_destination(datagrams[taken]);
    if (!head && !link_local_destination(datagrams[taken])) {
      ++counters_.send_errors;
      ++taken;
      continue;
    }
    if (head && !mac_of_ipv4_group(*head) && neighbors_.find(*head) == nullptr) {
      NeighborTable::HoldResult held = neighbors_.hold(*head, datagrams[taken].bytes, monotonic_now());
      counters_.unresolved_drops += held.dropped_oldest;
      if (held.send_request) send_arp(wire::ArpOperation::request, wire::kBroadcastMac, *head, wire::MacAddress{});
      ++taken;
      continue;
    }
    // One sendmmsg for the run of datagrams from the head whose peers are resolved.
    std::size_t messages = 0;
    while (taken + messages < datagrams.size() && messages < kRawMessagesPerCall) {
      const DescribedDatagram& datagram = datagrams[taken + messages];
      std::optional<Ipv4Address> destination = ipv4_destination(datagram);
      // A group's MAC and a link-local GID's come from the address itself.
      std::optional<wire::MacAddress> named =
          destination ? mac_of_ipv4_group(*destination) : link_local_destination(datagram);
      const wire::MacAddress* mac = named ? &*named : destination ? neighbors_.find(*destination) : nullptr;
      if (mac == nullptr) break;
      write_ethernet_header(io.send_headers[messages].data(), *mac,
                            destination ? wire::kEthertypeIpv4 : wire::kEthertypeIpv6);
      io.send_iovs[messages][0] = iovec{io.send_headers[messages].data(), wire::kEthernetHeaderLength};
      io.send_iovs[messages][1] = iovec{datagram.bytes.data(), datagram.bytes.size()};
      msghdr& header = io.send_messages[messages].msg_hdr;
      header = msghdr{};
      header.msg_iov = io.send_iovs[messages].data();
      header.msg_iovlen = 2;
      ++messages;
    }
    int sent = ::sendmmsg(fd_, io.send_messages.data(), static_cast<unsigned>(messages), 0);
    if (sent < 0) {
      if (is_back_pressure(errno)) return taken;
      ++counters_.send_errors;  // too long for the link and the like: lost, as on a wire
      ++taken;
      continue;
    }
    taken += static_cast<std::size_t>(sent);
  }
  return taken;
}

std::span<const ReceivedDatagram> RawPort::receive(TimeNs /*now*/) {
  Io& io = *io_;
  io.received.clear();
  for (std::size_t i = 0; i < kRawMessagesPerCall; ++i) {
    io.receive_iovs[i] = iovec{io.receive_buffers.data() + i * io.frame_capacity, io.frame_capacity};
    msghdr& header = io.receive_messages[i].msg_hdr;
    header = msghdr{};
    header.msg_name = &io.sources[i];
    header.msg_namelen = sizeof(sockaddr_ll);
    header.msg_iov = &io.receive_iovs[i];
    header.msg_iovlen = 1;
  }
  int count = ::recvmmsg(fd_, io.receive_messages.data(), kRawMessagesPerCall, MSG_DONTWAIT, nullptr);
  for (int i = 0; i < count; ++i) {
    const mmsghdr& message = io.receive_messages[static_cast<std::size_t>(i)];
    if (io.sources[static_cast<std::size_t>(i)].sll_pkttype == PACKET_OUTGOING) continue;
    ByteSpan frame(static_cast<const std::uint8_t*>(message.msg_hdr.msg_iov->iov_base),
                   std::min<std::size_t>(message.msg_len, io.frame_capacity));
    auto ethernet = wire::EthernetView::new_checked(frame);
    if (!ethernet) {
      ++counters_.foreign_frames;
      continue;
    }
    if (ethernet->ethertype() == wire::kEthertypeArp) {
      on_arp(ethernet->payload());
      continue;
    }
    ByteSpan datagram = ethernet->payload();
    auto ip = wire::IpDatagramView::new_checked(datagram);
    bool ipv4 = ip && ip->is_ipv4() && ethernet->ethertype() == wire::kEthertypeIpv4;
    wire::MacAddress expected_mac = mac_;
    if (ipv4) {
      ByteSpan address = ip->destination_address();
      Ipv4Address destination{address[0], address[1], address[2], address[3]};
      if (std::find(groups_.begin(), groups_.end(), destination) != groups_.end()) {
        expected_mac = *mac_of_ipv4_group(destination);
      } else {
        ipv4 = destination == ip_;
      }
    }
    bool ipv6 = ip && !ip->is_ipv4() && ethernet->ethertype() == wire::kEthertypeIpv6 &&
                std::ranges::equal(link_local_, ip->destination_address());
    if (ethernet->dst() != expected_mac || (!ipv4 && !ipv6)) {
      ++counters_.foreign_frames;
      continue;
    }
    // Ethernet pads short frames: the IP total length says where the datagram ends.
    std::size_t ip_length = ip->ip_total_length();
    io.received.push_back(ReceivedDatagram{datagram.first(std::min(ip_length, datagram.size())), true});
  }
  return io.received;
}

}  // namespace uroce::port
