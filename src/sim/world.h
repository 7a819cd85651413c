// What the simulated components of one partition share: the event queue,
// the packet pool, the fabric-wide counters that summary.json reports (added
// up over the partitions) and the frames on their way to other partitions
// (and from other ranks' partitions).
#pragma once

#include <cstdint>
#include <vector>

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

inline FabricCounters& operator+=(FabricCounters& sum, const FabricCounters& more) {
  sum.data_packets += more.data_packets;
  sum.pause_frames += more.pause_frames;
  sum.resume_frames += more.resume_frames;
  sum.pause_time_total += more.pause_time_total;
  sum.ecn_marked += more.ecn_marked;
  sum.drops += more.drops;
  sum.lossless_violations += more.lossless_violations;
  sum.link_losses += more.link_losses;
  sum.failure_losses += more.failure_losses;
  sum.trimmed += more.trimmed;
  return sum;
}

class Transmitter;

// A frame that left for a wire whose far end runs in another partition.
struct CrossingFrame {
  Transmitter* link;
  Packet* packet;
};

// The frames one partition sent another during a window, and the earliest
// of their arrivals.
struct Outbox {
  std::vector<CrossingFrame> frames;
  SimTime earliest = kSimNever;
  void put(Transmitter* link, Packet* packet) {
    frames.push_back({link, packet});
    if (packet->arrives_at < earliest) earliest = packet->arrives_at;
  }
};

struct SimWorld {
  EventQueue events;
  PacketPool packets;
  FabricCounters counters;
  // By the partition the frames go to, for the windows that alternate: the
  // far partition lands one window's frames while this one runs the next.
  std::vector<Outbox> outboxes[2];
  std::uint32_t window_parity = 0;
  // Frames that partitions of other ranks sent this one (see RankFrames).
  Outbox from_other_ranks;
  Outbox& outbox(std::uint32_t to) { return outboxes[window_parity][to]; }
};

}  // namespace uroce::sim
