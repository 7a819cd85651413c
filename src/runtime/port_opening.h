// Opening a device's port from its configuration: the raw Ethernet port on
// an interface, or the UDP port, wrapped by the intra-host path when asked
// for and /dev/shm allows it. One of the device's jobs (runtime/device_parts.h).
#pragma once

#include <memory>
#include <string>

#include "port/port.h"
#include "uroce/device.h"

namespace uroce::runtime {

Expected<std::unique_ptr<port::Port>, std::string> open_port(const DeviceConfig& config);

// The largest path MTU whose packets fit the port's link.
PathMtu largest_path_mtu(const port::Port& port);

}  // namespace uroce::runtime
