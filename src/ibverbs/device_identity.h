// Who a configured device is, worked out from its DeviceSpec alone: its
// address as a GID, its node GUID, the MTU of the link behind it and its GID
// table. Shared by the device list and the sysfs view (src/sysfs_view), which
// must describe the same devices.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ibverbs/ibverbs_device.h"
#include "uroce/engine.h"

namespace uroce::ibverbs {

struct DeviceIdentity {
  Gid gid{};               // the address as a RoCEv2 GID
  std::uint64_t guid = 0;  // node GUID, network byte order (as ibv_get_device_guid returns it)
  int link_mtu = 1500;
  std::string netdev;  // the interface behind the address ("lo" for loopback); empty if none holds it
};

// Nothing if the address is neither IPv4 nor IPv6.
std::optional<DeviceIdentity> identify(const DeviceSpec& spec);

// Soft-RoCE's GID table for one address: for an IPv4 address, fe80::EUI-64
// of the GUID at index 0 and the IPv4-mapped address at index 1; for an
// IPv6 address, that address at index 0. All RoCE v2.
std::vector<Gid> gid_table(const Gid& gid, std::uint64_t guid);

}  // namespace uroce::ibverbs
