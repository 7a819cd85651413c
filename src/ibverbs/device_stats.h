// UROCE_STATS=1: each device's packet counters on stderr when it closes, or
// at exit for a device still open then (librdmacm's devices stay open), for
// interop checks (ICRC errors, retransmissions) of programs that print none.
#pragma once

#include <string>

#include "uroce/device.h"

namespace uroce::ibverbs {

bool device_stats_wanted();

// Prints name's counters once: at close or at exit, whichever comes first.
void register_device_stats(const std::string& name, Device& device);
void print_and_forget_device_stats(const Device& device);

}  // namespace uroce::ibverbs
