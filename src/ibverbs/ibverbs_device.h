// The devices and contexts behind uroce's libibverbs.so.1. A program sees
// rdma-core's structures (Debian's libibverbs-dev headers give the layout);
// each one is the first member of a uroce struct, so the library gets from
// the pointer a program passes back to its own state. Devices come from the
// environment (configuration.h); a context is an extended verbs_context, so
// the header's inline verbs find the extended operations.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
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

class DeviceRuntime;

struct UroceDevice {
  ibv_device device;  // first: programs hold &device
  DeviceSpec spec;
  Gid gid{};               // the address as a RoCEv2 GID
  std::uint64_t guid = 0;  // node GUID (network byte order, as ibv_get_device_guid returns it)
  int index = 0;
  int link_mtu = 1500;  // the MTU of the link behind the address
  // The running device, while some context of this process uses it.
  std::mutex runtime_mutex;
  std::weak_ptr<DeviceRuntime> runtime;
};

// The device's GID table (device_identity.h).
std::vector<Gid> gid_table(const UroceDevice& device);

struct UroceContext {
  verbs_context verbs;  // first: programs hold &verbs.context
  UroceDevice* device;
  // Opened by the first verbs call that needs the device (runtime.h).
  std::mutex runtime_mutex;
  std::shared_ptr<DeviceRuntime> runtime;
  // Asynchronous events for this context; verbs.context.async_fd is a
  // semaphore eventfd counting them (ibv_get_async_event reads it).
  std::mutex async_mutex;
  std::deque<ibv_async_event> async_events;
};

inline UroceContext* context_of(ibv_context* context) {
  // verbs.context is the last member of verbs_context (the header says so).
  auto* verbs = reinterpret_cast<verbs_context*>(reinterpret_cast<std::uint8_t*>(context) -
                                                 offsetof(verbs_context, context));
  return reinterpret_cast<UroceContext*>(verbs);
}

// The port LID: uroce's extension for programs that address peers by LID
// alone (no GRH), as ibv_*_pingpong do by default: the low 16 bits of the
// address, and a LID names the address in the device's own /16 (or /112).
std::uint16_t port_lid(const Gid& gid);
Gid gid_for_lid(const Gid& own, std::uint16_t lid);

// All configured devices, built once on first use.
const std::vector<UroceDevice*>& all_devices();

}  // namespace uroce::ibverbs
