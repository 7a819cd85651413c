// Addresses that name their MAC, so that a frame to them needs no neighbour
// discovery: IPv6 link-local addresses made of a MAC address (fe80::EUI-64,
// RFC 4291 appendix A), as RoCE's default GID is, both ways; and IPv4
// multicast groups (RFC 1112: 01:00:5e and the group's low 23 bits).
#pragma once

#include <array>
#include <optional>

#include "uroce/vocabulary.h"
#include "wire/ethernet.h"

namespace uroce::port {

Gid link_local_of(const wire::MacAddress& mac);

// The MAC a link-local address was made of; nothing for an address that is
// not fe80::/64 with an EUI-64 interface identifier (ff:fe in its middle).
std::optional<wire::MacAddress> mac_of_link_local(const Gid& address);

// The MAC of an IPv4 multicast group (224.0.0.0/4); nothing for another address.
std::optional<wire::MacAddress> mac_of_ipv4_group(const std::array<std::uint8_t, 4>& group);

}  // namespace uroce::port
