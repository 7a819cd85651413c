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
                                                        std::uint32_t send_queue_depth,
                                                        std::uint32_t receive_queue_depth = 16);

// Posts one receive without buffers, with this wr_id, that a WRITE with
// immediate consumes (the workloads learn from it that a WRITE arrived).
// Throws std::runtime_error if the engine refuses (the queue is full).
void post_arrival_receive(HostNode& host, std::uint32_t qpn, std::uint64_t wr_id);

// connect_rc_pair for WRITEs with immediate counted where they land: a
// sender has at most a send queue of WRITEs in flight, so each end has as
// many arrival receives waiting (the workload posts one again for each it
// takes).
std::pair<std::uint32_t, std::uint32_t> connect_arrival_pair(HostNode& a, HostNode& b, const TransportSpec& transport,
                                                             std::uint32_t send_queue_depth, std::uint64_t wr_id);

}  // namespace uroce::sim
