// IPv6 link-local addresses made of a MAC address (fe80::EUI-64, RFC 4291
// appendix A), as RoCE's default GID is: the address from the MAC, and the
// MAC back from such an address, so that a frame to a peer's GID 0 needs no
// neighbour discovery.
#pragma once

#include <optional>

#include "uroce/engine.h"
#include "wire/ethernet.h"

namespace uroce::port {

Gid link_local_of(const wire::MacAddress& mac);

// The MAC a link-local address was made of; nothing for an address that is
// not fe80::/64 with an EUI-64 interface identifier (ff:fe in its middle).
std::optional<wire::MacAddress> mac_of_link_local(const Gid& address);

}  // namespace uroce::port
