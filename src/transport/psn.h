// Packet sequence number arithmetic: 24-bit values, modulo 2^24. Comparisons
// are meaningful within half the space (8M PSNs), as IBTA defines the valid
// and duplicate windows.
#pragma once

#include <cstdint>

namespace uroce::transport {

inline constexpr std::uint32_t kPsnMask = 0xFFFFFF;
// QP numbers are 24 bits too, but are not sequence numbers.
inline constexpr std::uint32_t kQpnMask = 0xFFFFFF;

inline constexpr std::uint32_t psn_add(std::uint32_t psn, std::int64_t delta) {
  return static_cast<std::uint32_t>((static_cast<std::int64_t>(psn) + delta) & kPsnMask);
}

// Signed distance a - b in (-2^23, 2^23].
inline constexpr std::int32_t psn_diff(std::uint32_t a, std::uint32_t b) {
  std::int32_t d = static_cast<std::int32_t>((a - b) & kPsnMask);
  return d > 0x800000 ? d - 0x1000000 : d;
}

inline constexpr bool psn_before(std::uint32_t a, std::uint32_t b) { return psn_diff(a, b) < 0; }
inline constexpr bool psn_at_or_before(std::uint32_t a, std::uint32_t b) { return psn_diff(a, b) <= 0; }

// The PSNs a message of `length` bytes takes at this MTU: one per packet, and
// one for an empty message. The requester numbers a SEND, WRITE or READ by it
// and the responder counts a READ's responses by it: both ends must agree.
inline constexpr std::uint32_t packets_for(std::uint64_t length, std::uint32_t mtu) {
  return length == 0 ? 1 : static_cast<std::uint32_t>((length + mtu - 1) / mtu);
}

}  // namespace uroce::transport
