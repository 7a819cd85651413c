// Test helper: wait for completions on a real-network Device's CQ.
#pragma once

#include <vector>

#include "tests/support/test_network.h"
#include "uroce/device.h"

namespace uroce::testing {

// Polls end's CQ through the device until count completions came or 10 s passed.
std::vector<WorkCompletion> wait_for(Device& device, const Endpoint& end, std::size_t count);

}  // namespace uroce::testing
