// link_local_of and mac_of_link_local: the EUI-64 mapping both ways; the
// MAC of an IPv4 group.
#include "port/link_local.h"

#include <algorithm>

namespace uroce::port {

Gid link_local_of(const wire::MacAddress& mac) {
  return Gid{0xFE, 0x80, 0,      0,      0,      0,      0,      0,
             static_cast<std::uint8_t>(mac[0] ^ 0x02), mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]};
}

std::optional<wire::MacAddress> mac_of_link_local(const Gid& address) {
  bool link_local = address[0] == 0xFE && address[1] == 0x80 &&
                    std::all_of(address.begin() + 2, address.begin() + 8, [](std::uint8_t b) { return b == 0; });
  if (!link_local || address[11] != 0xFF || address[12] != 0xFE) return std::nullopt;
  return wire::MacAddress{static_cast<std::uint8_t>(address[8] ^ 0x02), address[9], address[10], address[13],
                          address[14], address[15]};
}

std::optional<wire::MacAddress> mac_of_ipv4_group(const std::array<std::uint8_t, 4>& group) {
  if ((group[0] & 0xF0) != 0xE0) return std::nullopt;
  return wire::MacAddress{0x01, 0x00, 0x5E, static_cast<std::uint8_t>(group[1] & 0x7F), group[2], group[3]};
}

}  // namespace uroce::port
