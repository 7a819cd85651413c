// Opening a device's port (port_opening.h).
#include "runtime/port_opening.h"

#include "port/interface_info.h"
#include "port/local_port.h"
#include "port/raw_port.h"
#include "port/udp_port.h"

namespace uroce::runtime {

PathMtu largest_path_mtu(const port::Port& port) {
  return port::largest_path_mtu(port.max_datagram_length(), gid_is_ipv4(port.gid()));
}

Expected<std::unique_ptr<port::Port>, std::string> open_port(const DeviceConfig& config) {
  if (!config.interface.empty()) {
    port::RawPortOptions options;
    options.udp_port = config.udp_port;
    auto raw = port::RawPort::open(config.interface, config.address, options);
    if (!raw) return unexpected(raw.error());
    return std::unique_ptr<port::Port>(std::move(*raw));
  }
  port::UdpPortOptions options;
  options.port = config.udp_port;
  options.icrc = config.icrc;
  options.gso = config.gso;
  auto udp = port::UdpPort::open(config.address, options);
  if (!udp) return unexpected(udp.error());
  std::unique_ptr<port::Port> wire = std::make_unique<port::UdpPort>(std::move(*udp));
  if (!config.local_path) return wire;
  // Without a usable /dev/shm the device still works, over the wire only.
  auto local = port::LocalPort::wrap(wire, config.udp_port);
  if (!local) return wire;
  return std::unique_ptr<port::Port>(std::move(*local));
}

}  // namespace uroce::runtime
