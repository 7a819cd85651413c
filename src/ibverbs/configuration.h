// Which devices uroce's libibverbs offers, from the environment:
//   UROCE_ADDRESS    the device addresses, comma-separated (default
//                    127.0.0.1): uroce0 gets the first, uroce1 the second ...
//   UROCE_INTERFACE  an interface: the devices use the raw Ethernet port on
//                    it (CAP_NET_RAW) instead of UDP sockets
//   UROCE_PROGRESS   who moves packets: adaptive (default: the polling
//                    application while it polls, a progress thread when it
//                    stops), thread (the thread always), or inline (no
//                    thread: only the application's ibv_poll_cq)
// Two programs on one host need two addresses (each device binds UDP 4791
// on its own); `uroce run --address A -- PROGRAM` sets these for you.
#pragma once

#include <string>
#include <vector>

#include "common/expected.h"
#include "ibverbs/ibverbs_device.h"
#include "uroce/device.h"

namespace uroce::ibverbs {

// Reads the variables; an empty entry in UROCE_ADDRESS is skipped.
std::vector<DeviceSpec> configured_devices();

// How the devices' progress is driven (UROCE_PROGRESS), as DeviceConfig's
// progress_thread and progress_mode; an unknown value is an error naming it.
struct ProgressChoice {
  bool progress_thread = true;
  ProgressMode mode = ProgressMode::adaptive;
};
Expected<ProgressChoice, std::string> configured_progress();

}  // namespace uroce::ibverbs
