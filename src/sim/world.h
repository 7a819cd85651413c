// What every simulated component shares: the event queue, the packet pool
// and the fabric-wide counters that summary.json reports.
#pragma once

#include <cstdint>

#include "sim/event_queue.h"
#include "sim/packet.h"

namespace uroce::sim {

struct FabricCounters {
  std::uint64_t data_packets = 0;         // RoCE packets with payload that hosts put on the wire
  std::uint64_t pause_frames = 0;         // PFC XOFF frames sent
  std::uint64_t resume_frames = 0;        // PFC XON frames sent
  SimTime pause_time_total = 0;           // summed over every (port, priority) paused
  std::uint64_t ecn_marked = 0;           // packets a switch marked CE
  std::uint64_t drops = 0;                // lossy priorities over their limit, and violations below
  std::uint64_t lossless_violations = 0;  // lossless packets beyond XOFF plus headroom
  std::uint64_t link_losses = 0;          // RoCE packets a lossy link took (LinkSpec::loss)
  std::uint64_t failure_losses = 0;       // RoCE packets lost on a failed link (on it, or sent into it)
  std::uint64_t trimmed = 0;              // data packets whose payload a switch cut off
};

struct SimWorld {
  EventQueue events;
  PacketPool packets;
  FabricCounters counters;
};

}  // namespace uroce::sim
