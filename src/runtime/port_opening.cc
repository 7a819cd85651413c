// Opening a device's port (port_opening.h).
#include "runtime/port_opening.h"

#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>

#include "port/interface_info.h"
#include "port/local_port.h"
#include "port/local_ring.h"
#include "port/raw_port.h"
#include "port/udp_port.h"

namespace uroce::runtime {

PathMtu largest_path_mtu(const port::Port& port) {
  return port::largest_path_mtu(port.max_datagram_length(), gid_is_ipv4(port.gid()));
}

namespace {

// How long a device whose address is taken looks for the holder's inbox: 1 s.
constexpr int kShareAttempts = 100;
constexpr int kShareRetryMs = 10;

// A port beside the live uroce device that holds the address's socket in
// this namespace (its inbox is published), if there is one.
std::optional<port::UdpPort> port_beside_holder(const DeviceConfig& config, port::UdpPortOptions options) {
  options.receives_on_port = false;
  auto beside = port::UdpPort::open(config.address, options);
  if (!beside) return std::nullopt;
  std::string holder = port::local_segment_path(beside->gid(), config.udp_port, port::this_thread_network_namespace());
  if (!port::local_segment_is_live(holder)) return std::nullopt;
  return std::move(*beside);
}

}  // namespace

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
  bool sharing = false;
  // Another device on this host (another process) may hold the address, as
  // processes share a NIC's: this one then takes a member's inbox beside
  // it. The holder binds its socket a moment before it publishes its inbox,
  // and may be closing: the bind and the look are tried again for a while.
  for (int attempt = 0; !udp && errno == EADDRINUSE && config.local_path && attempt < kShareAttempts; ++attempt) {
    if (std::optional<port::UdpPort> beside = port_beside_holder(config, options)) {
      udp = std::move(*beside);
      sharing = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kShareRetryMs));
    udp = port::UdpPort::open(config.address, options);
  }
  if (!udp) return unexpected(udp.error());
  std::unique_ptr<port::Port> wire = std::make_unique<port::UdpPort>(std::move(*udp));
  if (!config.local_path) return wire;
  // Without a usable /dev/shm the device still works, over the wire only;
  // a member of a shared address has nothing else to receive from.
  auto local = port::LocalPort::wrap(wire, config.udp_port, sharing);
  if (!local) {
    if (sharing) return unexpected("cannot share " + config.address + " with the device that holds it: " + local.error());
    return wire;
  }
  return std::unique_ptr<port::Port>(std::move(*local));
}

}  // namespace uroce::runtime
