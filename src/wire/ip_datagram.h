// An IP datagram as the layers that carry it see it: the ports, the device's
// transmit queue, the simulator's hosts and switches. They need its version,
// header length, traffic class, addresses and UDP ports, and where the
// RoCEv2 packet starts, but not its transport headers. Checked once on
// creation (IPv4 with any header length, or IPv6, carrying a whole UDP
// header), so every accessor reads inside the bytes; IPv4 options are
// respected. The one place outside the full parser (frame.h) that knows the
// headers' layout.
#pragma once

#include <cstdint>
#include <optional>

#include "common/bytes.h"
#include "uroce/transmit.h"
#include "uroce/vocabulary.h"
#include "wire/error.h"
#include "wire/ipv4.h"

namespace uroce::wire {

// The IP version an IP header states (4 or 6), or 0 when it is empty or
// states another.
int ip_version(ByteSpan ip_header);

class IpDatagramView {
 public:
  static WireResult<IpDatagramView> new_checked(ByteSpan datagram);

  bool is_ipv4() const { return ipv4_; }
  std::size_t ip_header_length() const { return ip_header_length_; }
  // IPv4's TOS byte or IPv6's traffic class: DSCP (6 bits) and ECN (2 bits).
  std::uint8_t traffic_class() const;
  std::uint8_t dscp() const { return traffic_class() >> 2; }
  Ecn ecn() const { return static_cast<Ecn>(traffic_class() & 0x3); }
  // 4 bytes for IPv4, 16 for IPv6.
  ByteSpan source_address() const;
  ByteSpan destination_address() const;
  // The destination as a GID (IPv4 mapped as ::ffff:a.b.c.d).
  Gid destination_gid() const;
  std::uint16_t source_port() const;
  std::uint16_t destination_port() const;
  // What the IP header says the datagram's length is (Ethernet may pad past it).
  std::size_t ip_total_length() const;
  // Everything after the UDP header to the end of the bytes: BTH .. ICRC.
  ByteSpan udp_payload() const { return bytes_.subspan(ip_header_length_ + kUdpHeaderBytes); }
  // The BTH's opcode, when the UDP payload holds one.
  std::optional<std::uint8_t> bth_opcode() const;

 private:
  static constexpr std::size_t kUdpHeaderBytes = 8;
  IpDatagramView(ByteSpan bytes, bool ipv4, std::size_t ip_header_length)
      : bytes_(bytes), ipv4_(ipv4), ip_header_length_(ip_header_length) {}
  ByteSpan bytes_;
  bool ipv4_ = true;
  std::size_t ip_header_length_ = 0;
};

// The description of a datagram the engine built (uroce/transmit.h), for
// whoever holds only its bytes: a test, a benchmark, a port handed foreign
// bytes. Fails as new_checked does.
WireResult<Transmit> describe_transmit(ByteSpan datagram);

// What a UD receive's 40-byte GRH area says of the sender: RoCEv2 puts the
// IPv6 header there, or the IPv4 header in its last 20 bytes (the first 20
// undefined). Its source address (as a GID) and its traffic class byte.
struct GrhSource {
  Gid source{};
  std::uint8_t traffic_class = 0;
};
WireResult<GrhSource> parse_grh_area(ByteSpan area);

// Marks a datagram's ECN bits Congestion Experienced, as a switch does, when
// it is ECN-capable (ECT(0) or ECT(1)) and not marked yet; on IPv4 the header
// checksum is computed again. Returns whether it marked.
// The ICRC does not cover the ECN bits, so it stays valid.
bool mark_congestion_experienced(MutableByteSpan datagram);

}  // namespace uroce::wire
