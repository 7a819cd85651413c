// UdpPort's batched system calls: sendmmsg of runs of datagrams (one UDP GSO
// message per run of equal-sized datagrams to one peer), and recvmmsg with
// GRO, whose merged runs are split back into datagrams.
#include <netinet/udp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "port/udp_port_io.h"

namespace uroce::port {
namespace {

// What the port needs of a datagram, all from its description: where it
// goes, from which source port, with which TOS, and its UDP payload.
struct Outgoing {
  bool valid = false;
  int tos = 0;
  const std::uint8_t* destination = nullptr;
  std::uint16_t source_port = 0;
  std::uint16_t destination_port = 0;
  ByteSpan payload;
};

Outgoing describe(const DescribedDatagram& datagram, bool ipv4) {
  Outgoing out;
  const Transmit& transmit = datagram.transmit;
  if (transmit.ipv4 != ipv4 || transmit.udp_payload_offset == 0 || transmit.udp_payload_offset > datagram.bytes.size()) {
    return out;
  }
  out.valid = true;
  out.tos = transmit.traffic_class;
  out.destination = gid_address_bytes(transmit.destination, ipv4);
  out.source_port = transmit.source_port;
  out.destination_port = transmit.destination_port;
  out.payload = ByteSpan(datagram.bytes).subspan(transmit.udp_payload_offset);
  return out;
}

// Whether b may ride in a's GSO run, which leaves with a's TOS. Towards a
// loopback address a Not-ECT datagram may ride in an ECT(0) run: nothing on
// loopback marks, the ICRC does not cover the ECN bits, and the only Not-ECT
// datagrams uroce sends are ACKs and CNPs, whose ECN bits no receiver reads.
// So a request and the bare ACK posted behind it (a ping-pong's pong) reach
// the peer in one receive: its ibv_poll_cq finds the send completion with the
// WRITE, instead of taking the WRITE and polling on while the kernel delivers
// the ACK a datagram later. Every other difference (DSCP, CE, ECT(1)) ends the run.
bool same_flow(const Outgoing& a, const Outgoing& b, bool ipv4) {
  if (a.source_port != b.source_port || a.destination_port != b.destination_port ||
      std::memcmp(a.destination, b.destination, ipv4 ? 4 : 16) != 0) {
    return false;
  }
  if (a.tos == b.tos) return true;
  constexpr int kEcnBits = 3, kNotEct = 0, kEct0 = 2;
  bool ack_behind_request = (a.tos & kEcnBits) == kEct0 && (b.tos & kEcnBits) == kNotEct;
  return ack_behind_request && (a.tos >> 2) == (b.tos >> 2) && is_loopback(a.destination, ipv4);
}

bool is_back_pressure(int error) { return error == EAGAIN || error == EWOULDBLOCK || error == ENOBUFS; }

}  // namespace

bool is_loopback(const std::uint8_t* address, bool ipv4) {
  static constexpr std::uint8_t kIpv6Loopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  return ipv4 ? address[0] == 127 : std::memcmp(address, kIpv6Loopback, 16) == 0;
}

// Points every message at its buffer, source and control space once; after
// that only what the kernel rewrote in the messages it filled is reset.
void UdpPort::Io::prepare_receive_headers() {
  auto reset = [this](std::size_t i) {
    msghdr& header = receive_messages[i].msg_hdr;
    header.msg_namelen = sizeof sources[i];
    header.msg_controllen = receive_controls[i].size();
    header.msg_flags = 0;
  };
  if (!receive_headers_ready) {
    constexpr std::size_t kSlot = kReceiveHeadroom + kReceiveBufferPayload;
    for (std::size_t i = 0; i < kMessagesPerCall; ++i) {
      receive_iovs[i] = iovec{receive_buffers.data() + i * kSlot + kReceiveHeadroom, kReceiveBufferPayload};
      msghdr& header = receive_messages[i].msg_hdr;
      header.msg_name = &sources[i];
      header.msg_iov = &receive_iovs[i];
      header.msg_iovlen = 1;
      header.msg_control = receive_controls[i].data();
      reset(i);
    }
    receive_headers_ready = true;
    receive_headers_used = 0;
  }
  for (std::size_t i = 0; i < receive_headers_used; ++i) reset(i);
  receive_headers_used = 0;
}

std::size_t UdpPort::send(std::span<const DescribedDatagram> datagrams) {
  Io& io = *io_;
  std::size_t taken = 0;
  while (taken < datagrams.size()) {
    Outgoing head = describe(datagrams[taken], ipv4_);
    int fd = head.valid ? socket_for_source_port(head.source_port) : -1;
    if (fd < 0) {
      ++send_errors_;
      ++taken;
      continue;
    }
    // A loopback receiver whose queue is half full is waited for, as a
    // paused port would be (back-pressure: the device sends again shortly).
    bool loopback = is_loopback(head.destination, ipv4_);
    std::size_t budget = SIZE_MAX;  // bytes this call may send to head's receiver
    if (loopback) {
      budget = io.loopback_receivers.room_for(head.destination, ipv4_, head.destination_port);
      if (budget == 0) return taken;
    }
    std::size_t call_bytes = 0;
    // One sendmmsg for the messages that leave from fd's source port (and,
    // towards loopback, go to head's receiver); each message carries one
    // datagram or a GSO run of them.
    std::array<std::size_t, kMessagesPerCall> datagrams_in{};
    std::array<std::size_t, kMessagesPerCall> bytes_in{};
    std::size_t messages = 0;
    std::size_t iovs = 0;
    std::size_t next = taken;
    while (next < datagrams.size() && messages < kMessagesPerCall) {
      Outgoing first = describe(datagrams[next], ipv4_);
      if (!first.valid || first.source_port != head.source_port) break;
      bool same_receiver = first.destination_port == head.destination_port &&
                           std::memcmp(first.destination, head.destination, ipv4_ ? 4 : 16) == 0;
      if ((loopback || is_loopback(first.destination, ipv4_)) && !same_receiver) break;
      if (call_bytes >= budget) break;
      iovec* run_iovs = &io.send_iovs[iovs];
      std::size_t count = 0;
      std::size_t bytes = 0;
      bool segment = may_segment(first.destination);
      for (Outgoing datagram = first;;) {
        io.send_iovs[iovs++] = iovec{const_cast<std::uint8_t*>(datagram.payload.data()), datagram.payload.size()};
        ++count;
        bytes += datagram.payload.size();
        // A run's datagrams all have the first one's size but the last, which may be shorter.
        if (!segment || datagram.payload.size() != first.payload.size()) break;
        if (count == kMaxSegmentsPerRun || next + count == datagrams.size()) break;
        datagram = describe(datagrams[next + count], ipv4_);
        if (!datagram.valid || !same_flow(first, datagram, ipv4_) || datagram.payload.size() > first.payload.size() ||
            bytes + datagram.payload.size() > kLargestRun) {
          break;
        }
      }
      msghdr& header = io.send_messages[messages].msg_hdr;
      header = msghdr{};
      io.destinations[messages] = make_address(ipv4_, first.destination, first.destination_port);
      header.msg_name = &io.destinations[messages].storage;
      header.msg_namelen = io.destinations[messages].length;
      header.msg_iov = run_iovs;
      header.msg_iovlen = count;
      // The TOS goes in a control message only where it is not the
      // socket's own (ECT(0), DSCP 0: most datagrams): the kernel then
      // skips parsing one per send.
      bool tos_message = io.tos_in_every_send || first.tos != kSendSocketTos;
      header.msg_control = io.send_controls[messages].data();
      header.msg_controllen = (tos_message ? CMSG_SPACE(sizeof(int)) : 0) +
                              (count > 1 ? CMSG_SPACE(sizeof(std::uint16_t)) : 0);
      std::memset(header.msg_control, 0, header.msg_controllen);
      cmsghdr* cmsg = CMSG_FIRSTHDR(&header);
      if (tos_message) {
        cmsg->cmsg_level = ipv4_ ? IPPROTO_IP : IPPROTO_IPV6;
        cmsg->cmsg_type = ipv4_ ? IP_TOS : IPV6_TCLASS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(cmsg), &first.tos, sizeof first.tos);
        cmsg = CMSG_NXTHDR(&header, cmsg);
      }
      if (count > 1) {
        cmsg->cmsg_level = SOL_UDP;
        cmsg->cmsg_type = UDP_SEGMENT;
        cmsg->cmsg_len = CMSG_LEN(sizeof(std::uint16_t));
        auto segment_size = static_cast<std::uint16_t>(first.payload.size());
        std::memcpy(CMSG_DATA(cmsg), &segment_size, sizeof segment_size);
      }
      if (header.msg_controllen == 0) header.msg_control = nullptr;
      bytes_in[messages] = bytes;
      call_bytes += bytes;
      datagrams_in[messages++] = count;
      next += count;
    }
    int sent = ::sendmmsg(fd, io.send_messages.data(), static_cast<unsigned>(messages), 0);
    if (sent < 0) {
      if (is_back_pressure(errno)) return taken;
      if (datagrams_in[0] > 1 && (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP)) {
        io.gso_refused = true;  // this path cannot segment: offer the same datagrams one by one
        continue;
      }
      send_errors_ += datagrams_in[0];  // unreachable peer and the like: the transport's timers recover
      taken += datagrams_in[0];
      continue;
    }
    for (int i = 0; i < sent; ++i) {
      taken += datagrams_in[static_cast<std::size_t>(i)];
      gso_sends_ += datagrams_in[static_cast<std::size_t>(i)] > 1;
      if (loopback) {
        io.loopback_receivers.sent(head.destination, ipv4_, head.destination_port, bytes_in[static_cast<std::size_t>(i)]);
      }
    }
  }
  return taken;
}

std::span<const ReceivedDatagram> UdpPort::receive(TimeNs /*now*/) {
  Io& io = *io_;
  io.received.clear();
  io.prepare_receive_headers();
  int got = ::recvmmsg(receive_fd_, io.receive_messages.data(), io.receive_batch, MSG_DONTWAIT, nullptr);
  io.receive_batch = got > 0 ? static_cast<unsigned>(kMessagesPerCall) : 1;
  if (got <= 0) {
    if (!group_fds_.empty()) receive_from_groups();
    return io.received;
  }
  io.receive_headers_used = static_cast<std::size_t>(got);
  constexpr std::size_t kSlot = kReceiveHeadroom + kReceiveBufferPayload;

  // Read each message's TOS and GRO segment size, and size the arena for the
  // datagrams after the first of each run before copying any (no reallocation
  // under spans already handed out).
  std::array<int, kMessagesPerCall> tos{};
  std::array<std::size_t, kMessagesPerCall> segment_size{};
  std::size_t arena_bytes = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(got); ++i) {
    const msghdr& header = io.receive_messages[i].msg_hdr;
    std::size_t length = io.receive_messages[i].msg_len;
    segment_size[i] = length;
    for (cmsghdr* cmsg = CMSG_FIRSTHDR(&header); cmsg != nullptr;
         cmsg = CMSG_NXTHDR(const_cast<msghdr*>(&header), cmsg)) {
      if (cmsg->cmsg_level == IPPROTO_IP && cmsg->cmsg_type == IP_TOS) tos[i] = *CMSG_DATA(cmsg);
      if (cmsg->cmsg_level == IPPROTO_IPV6 && cmsg->cmsg_type == IPV6_TCLASS) {
        std::memcpy(&tos[i], CMSG_DATA(cmsg), sizeof(int));
      }
      if (cmsg->cmsg_level == SOL_UDP && cmsg->cmsg_type == UDP_GRO) {
        std::uint16_t gso_size;
        std::memcpy(&gso_size, CMSG_DATA(cmsg), sizeof gso_size);
        if (gso_size > 0) segment_size[i] = gso_size;
      }
    }
    if ((header.msg_flags & MSG_TRUNC) != 0 || length == 0) continue;
    std::size_t segments = (length + segment_size[i] - 1) / segment_size[i];
    if (segments > 1) {
      arena_bytes += (segments - 1) * (kReceiveHeadroom + segment_size[i]);
      ++gro_receives_;
    }
  }
  if (io.arena.size() < arena_bytes) io.arena.resize(arena_bytes);

  std::uint8_t* arena = io.arena.data();
  for (std::size_t i = 0; i < static_cast<std::size_t>(got); ++i) {
    const msghdr& header = io.receive_messages[i].msg_hdr;
    std::size_t length = io.receive_messages[i].msg_len;
    // Larger than any RoCEv2 datagram, or empty: not ours.
    if ((header.msg_flags & MSG_TRUNC) != 0 || length == 0) continue;
    std::uint8_t* payload = io.receive_buffers.data() + i * kSlot + kReceiveHeadroom;
    std::size_t size = segment_size[i];
    for (std::size_t offset = 0; offset < length; offset += size) {
      std::size_t this_length = std::min(size, length - offset);
      std::uint8_t* at = payload;
      if (offset > 0) {  // later datagrams of a GRO run: copy behind headroom of their own
        at = arena + kReceiveHeadroom;
        std::memcpy(at, payload + offset, this_length);
        arena += kReceiveHeadroom + this_length;
      }
      ReceivedDatagram& datagram = io.received.emplace_back();
      rebuild_headers(at, this_length, &io.sources[i], tos[i], gid_, datagram);
    }
  }
  if (!group_fds_.empty()) receive_from_groups();
  return io.received;
}

}  // namespace uroce::port
