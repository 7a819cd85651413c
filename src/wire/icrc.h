// The RoCEv2 Invariant CRC: CRC-32 over 8 bytes of 0xFF, the IP header, the
// UDP header and the transport packet, with the fields a router may change
// (IPv4 TOS/TTL/checksum, IPv6 class/flow/hop limit, UDP checksum, BTH byte 4)
// replaced by ones. It travels least significant byte first.
#pragma once

#include <cstdint>

#include "common/bytes.h"

namespace uroce::wire {

inline constexpr std::size_t kIcrcLength = 4;

// ip_header: the IPv4 header (with any options) or IPv6 header as on the wire.
// udp_to_pad: the UDP header, BTH, extension headers, payload and pad, that
// is the UDP datagram without its trailing ICRC.
std::uint32_t compute_icrc(ByteSpan ip_header, ByteSpan udp_to_pad);

}  // namespace uroce::wire
