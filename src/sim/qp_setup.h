// Connected RC QP pairs between simulated hosts, set up directly on both
// engines (the simulator needs no out-of-band exchange).
#pragma once

#include <cstdint>
#include <utility>

#include "sim/host_node.h"
#include "sim/scenario.h"

namespace uroce::sim {

// Creates an RC QP on each host and moves both to RTS, connected to each
// other; returns (QPN on a, QPN on b). Throws std::runtime_error if an engine
// refuses (its limits are exceeded).
std::pair<std::uint32_t, std::uint32_t> connect_rc_pair(HostNode& a, HostNode& b, const TransportSpec& transport,
                                                        std::uint32_t send_queue_depth);

}  // namespace uroce::sim
