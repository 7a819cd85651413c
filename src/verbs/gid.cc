// The GID helpers declared in uroce/engine.h: IPv4-mapped addresses
// (::ffff:a.b.c.d), as RoCEv2 carries an IPv4 address in a GID, and
// multicast groups.
#include <algorithm>

#include "uroce/engine.h"

namespace uroce {

Gid gid_from_ipv4(std::array<std::uint8_t, 4> address) {
  Gid gid{};
  gid[10] = gid[11] = 0xFF;
  std::copy(address.begin(), address.end(), gid.begin() + 12);
  return gid;
}

bool gid_is_ipv4(const Gid& gid) {
  return std::all_of(gid.begin(), gid.begin() + 10, [](std::uint8_t b) { return b == 0; }) && gid[10] == 0xFF &&
         gid[11] == 0xFF;
}

bool gid_is_multicast(const Gid& gid) {
  constexpr std::uint8_t kIpv6Multicast = 0xFF, kIpv4MulticastHigh = 0xE0, kHighNibble = 0xF0;
  return gid[0] == kIpv6Multicast || (gid_is_ipv4(gid) && (gid[12] & kHighNibble) == kIpv4MulticastHigh);
}

}  // namespace uroce
