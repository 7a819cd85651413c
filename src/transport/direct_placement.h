// Multipath direct placement on the wire (MultipathConfig::direct_placement).
// A WRITE's FIRST and ONLY packets carry IBA's RETH; with direct placement
// its MIDDLE and LAST packets carry one too, right after the BTH, naming
// that packet's own target: the VA its first byte goes to, the rkey, and the
// bytes of the message from there on. A responder can then check and place
// each packet on its own, in whatever order the paths deliver them. The
// requester sets BTH place_early on a WRITE that no earlier unfinished WRITE,
// READ or atomic of the QP overlaps under the same rkey; the responder places
// only such packets ahead of a gap, so overlapping requests still end as
// their PSN order says. Plain RoCEv2 peers never see either: both ends of a
// multipath QP must set it.
#pragma once

#include <cstddef>

#include "uroce/engine.h"
#include "wire/frame.h"

namespace uroce::transport {

inline constexpr std::size_t kPlacementHeaderLength = wire::RethRepr::kLength;

inline bool places_directly(const MultipathConfig& multipath) {
  return multipath.entropy_values != 0 && multipath.direct_placement;
}

// Whether a packet with this opcode carries the placement header at the
// front of what IBA calls its payload: RC WRITE MIDDLE and LAST packets.
inline bool carries_placement_header(const MultipathConfig& multipath, const wire::OpcodeInfo& op) {
  return places_directly(multipath) && op.kind == wire::OpKind::rdma_write && op.transport == wire::Transport::rc &&
         (op.position == wire::Position::middle || op.position == wire::Position::last);
}

// Moves the placement header from the front of packet.payload into
// packet.headers.reth; false when the payload is too short to hold one.
inline bool take_placement_header(wire::RocePacket& packet) {
  if (packet.payload.size() < kPlacementHeaderLength) return false;
  packet.headers.reth = wire::RethRepr::parse(packet.payload.first(kPlacementHeaderLength));
  packet.payload = packet.payload.subspan(kPlacementHeaderLength);
  return true;
}

}  // namespace uroce::transport
