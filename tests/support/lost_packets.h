// Channel faults that lose chosen request packets: the first transmissions of
// given PSNs from engine 1, to make a test's loss exact.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tests/support/test_network.h"

namespace uroce::testing {

// The PSN of a request packet (an IPv4 RoCE datagram) from engine 1
// (10.0.0.1), or -1 for anything else.
std::int64_t request_psn(std::span<const std::uint8_t> datagram);

// A link that loses the first `times` transmissions of each chosen request PSN
// and nothing else.
ChannelFaults lose_request_psns(std::vector<std::uint32_t> psns, int times = 1);

}  // namespace uroce::testing
