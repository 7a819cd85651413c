// identify() and gid_table(): a device's addresses and names from its spec.
#include "ibverbs/device_identity.h"

#include <arpa/inet.h>

#include <array>
#include <cstring>

#include "port/interface_info.h"

namespace uroce::ibverbs {
namespace {

// A MAC address for the device: the interface's for the raw port; for a UDP
// device, a locally administered one made of the address's last four bytes.
wire::MacAddress device_mac(const DeviceSpec& spec, const Gid& gid) {
  if (!spec.interface.empty()) {
    if (auto interface = port::find_interface(spec.interface)) return interface->mac;
  }
  return {0x02, 0x00, gid[12], gid[13], gid[14], gid[15]};
}

// The EUI-64 of a MAC address (universal/local bit flipped, ff:fe in the middle).
std::array<std::uint8_t, 8> eui64(const wire::MacAddress& mac) {
  return {static_cast<std::uint8_t>(mac[0] ^ 0x02), mac[1], mac[2], 0xFF, 0xFE, mac[3], mac[4], mac[5]};
}

bool parse_gid(const std::string& address, Gid& gid) {
  std::array<std::uint8_t, 4> ipv4;
  if (::inet_pton(AF_INET, address.c_str(), ipv4.data()) == 1) {
    gid = gid_from_ipv4(ipv4);
    return true;
  }
  return ::inet_pton(AF_INET6, address.c_str(), gid.data()) == 1;
}

bool is_loopback(const Gid& gid) {
  return gid_is_ipv4(gid) ? gid[12] == 127 : gid == Gid{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
}

}  // namespace

std::optional<DeviceIdentity> identify(const DeviceSpec& spec) {
  DeviceIdentity identity;
  if (!parse_gid(spec.address, identity.gid)) return std::nullopt;
  std::array<std::uint8_t, 8> guid = eui64(device_mac(spec, identity.gid));
  std::memcpy(&identity.guid, guid.data(), 8);
  identity.link_mtu = port::link_mtu_for_address(identity.gid);
  if (!spec.interface.empty()) {
    identity.netdev = spec.interface;
    if (auto interface = port::find_interface(spec.interface)) identity.link_mtu = interface->mtu;
  } else if (auto interface = port::interface_with_address(identity.gid)) {
    identity.netdev = interface->name;
  } else if (is_loopback(identity.gid)) {
    identity.netdev = "lo";
  }
  return identity;
}

std::vector<Gid> gid_table(const Gid& gid, std::uint64_t guid) {
  if (!gid_is_ipv4(gid)) return {gid};
  Gid link_local{0xFE, 0x80};
  std::memcpy(link_local.data() + 8, &guid, 8);
  return {link_local, gid};
}

}  // namespace uroce::ibverbs
