// Which devices uroce's libibverbs offers, from the environment:
//   UROCE_ADDRESS    the device addresses, comma-separated (default
//                    127.0.0.1): uroce0 gets the first, uroce1 the second ...
//   UROCE_INTERFACE  an interface: the devices use the raw Ethernet port on
//                    it (CAP_NET_RAW) instead of UDP sockets
// Two programs on one host need two addresses (each device binds UDP 4791
// on its own); `uroce run --address A -- PROGRAM` sets these for you.
#pragma once

#include <string>
#include <vector>

#include "ibverbs/ibverbs_device.h"

namespace uroce::ibverbs {

// Reads the variables; an empty entry in UROCE_ADDRESS is skipped.
std::vector<DeviceSpec> configured_devices();

}  // namespace uroce::ibverbs
