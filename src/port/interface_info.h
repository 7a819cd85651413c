// Facts about a local network interface that ports need: its index, MAC
// address and MTU, and which interface holds a given address. Looked up in
// the calling thread's network namespace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/expected.h"
#include "uroce/engine.h"
#include "wire/ethernet.h"

namespace uroce::port {

struct InterfaceInfo {
  std::string name;
  int index = 0;
  wire::MacAddress mac{};
  int mtu = 1500;
  bool is_loopback = false;
};

Expected<InterfaceInfo, std::string> find_interface(const std::string& name);
// The interface that holds this local address, if any.
std::optional<InterfaceInfo> interface_with_address(const Gid& gid);
// The interface's first IPv4 address, as a GID.
std::optional<Gid> first_ipv4_address(const std::string& interface);

}  // namespace uroce::port
