// The devices and contexts behind uroce's libibverbs.so.1. A program sees
// rdma-core's structures (Debian's libibverbs-dev headers give the layout);
// each one is the first member of a uroce struct, so the library gets from
// the pointer a program passes back to its own state. Devices come from the
// environment (configuration.h); a context is an extended verbs_context, so
// the header's inline verbs find the extended operations.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

#include "uroce/engine.h"

namespace uroce::ibverbs {

// What a device is: its name and where its port lives.
struct DeviceSpec {
  std::string name;       // uroce0, uroce1, ...
  std::string address;    // the device's IPv4 or IPv6 address
  std::string interface;  // empty: the UDP port; else the raw Ethernet port on it
};

struct UroceDevice {
  ibv_device device;  // first: programs hold &device
  DeviceSpec spec;
  Gid gid{};               // the address as a RoCEv2 GID
  std::uint64_t guid = 0;  // node GUID (network byte order, as ibv_get_device_guid returns it)
  int index = 0;
  int link_mtu = 1500;  // the MTU of the link behind the address
};

// Soft-RoCE's GID table for one address: for an IPv4 address, fe80::EUI-64
// of the GUID at index 0 and the IPv4-mapped address at index 1; for an
// IPv6 address, that address at index 0. All RoCE v2.
std::vector<Gid> gid_table(const UroceDevice& device);

struct UroceContext {
  verbs_context verbs;  // first: programs hold &verbs.context
  UroceDevice* device;
};

inline UroceContext* context_of(ibv_context* context) {
  // verbs.context is the last member of verbs_context (the header says so).
  auto* verbs = reinterpret_cast<verbs_context*>(reinterpret_cast<std::uint8_t*>(context) -
                                                 offsetof(verbs_context, context));
  return reinterpret_cast<UroceContext*>(verbs);
}

// All configured devices, built once on first use.
const std::vector<UroceDevice*>& all_devices();

}  // namespace uroce::ibverbs
