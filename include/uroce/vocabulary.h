// The words every layer of uroce shares, below all of them: time, the GID
// (an address), and the sizes and numbers the wire fixes. The engine, the
// ports, the connection manager and the verbs objects include this, never
// the engine's API (uroce/engine.h), which sits above them.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

namespace uroce {

// Nanoseconds on the driver's clock (monotonic or simulated).
using TimeNs = std::int64_t;
inline constexpr TimeNs kNever = INT64_MAX;

// A RoCEv2 GID: an IPv6 address, or an IPv4 address mapped as ::ffff:a.b.c.d.
using Gid = std::array<std::uint8_t, 16>;

inline Gid gid_from_ipv4(std::array<std::uint8_t, 4> address) {
  Gid gid{};
  gid[10] = gid[11] = 0xFF;
  std::copy(address.begin(), address.end(), gid.begin() + 12);
  return gid;
}

inline bool gid_is_ipv4(const Gid& gid) {
  return std::all_of(gid.begin(), gid.begin() + 10, [](std::uint8_t b) { return b == 0; }) && gid[10] == 0xFF &&
         gid[11] == 0xFF;
}

// A multicast group's GID: IPv4-mapped 224.0.0.0/4 (RoCEv2's IPv4 groups,
// as rdma_cm maps them) or IPv6 ff00::/8.
inline bool gid_is_multicast(const Gid& gid) {
  constexpr std::uint8_t kIpv6Multicast = 0xFF, kIpv4MulticastHigh = 0xE0, kHighNibble = 0xF0;
  return gid[0] == kIpv6Multicast || (gid_is_ipv4(gid) && (gid[12] & kHighNibble) == kIpv4MulticastHigh);
}

// The address a GID holds, as an IP header carries it: the last 4 bytes of
// an IPv4-mapped GID, or all 16.
inline const std::uint8_t* gid_address_bytes(const Gid& gid, bool ipv4) { return gid.data() + (ipv4 ? 12 : 0); }

// The destination QP of every multicast datagram (IBTA 10.5.2.2).
inline constexpr std::uint32_t kMulticastQpn = 0xFFFFFF;
// QP 1, the General Services Interface: where the CM's MADs go.
inline constexpr std::uint32_t kGsiQpn = 1;

// The largest datagram the engine emits: IPv6 + UDP + BTH + AtomicETH-sized
// headers + a 4096-byte payload + pad + ICRC, rounded up.
inline constexpr std::size_t kMaxDatagramLength = 4096 + 256;

// The member of a shared address that a QPN belongs to (EngineConfig::qpn_member):
// bits 20 to 23.
inline constexpr unsigned kQpnMemberShift = 20;
inline constexpr std::uint8_t kQpnMembers = 16;
inline constexpr std::uint8_t qpn_member_of(std::uint32_t qpn) {
  return static_cast<std::uint8_t>((qpn >> kQpnMemberShift) & 0xF);
}

}  // namespace uroce
