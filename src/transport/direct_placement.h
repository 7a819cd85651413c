// Multipath direct placement on the wire (MultipathConfig::direct_placement).
// Every data packet of a multipath QP says where its payload goes, so a
// responder can check and place each on its own, in whatever order the
// paths deliver them:
// - a WRITE's FIRST and ONLY packets carry IBA's RETH; its MIDDLE and LAST
//   packets carry one too, right after the BTH, naming that packet's own
//   target: the VA its first byte goes to, the rkey, and the bytes of the
//   message from there on;
// - every SEND packet carries 8 bytes right after the BTH (and the
//   ImmDt or IETH its opcode has): the message's number among the messages
//   that take a receive WQE (SENDs and WRITEs with immediate, counted from
//   0 on the QP), then the packet's offset in the message, both big-endian.
// The requester sets BTH place_early on a SEND, and on a WRITE that no
// earlier unfinished WRITE, READ or atomic of the QP overlaps under the same
// rkey and no earlier SEND with invalidate revokes the rkey of; the
// responder places only such packets ahead of a gap, so requests still end
// as their PSN order says. Plain RoCEv2 peers
// never see any of it: both ends of a multipath QP must set it.
#pragma once

#include <cstddef>
#include <optional>

#include "common/bytes.h"
#include "uroce/engine.h"
#include "wire/frame.h"

namespace uroce::transport {

inline constexpr std::size_t kWritePlacementLength = wire::RethRepr::kLength;
inline constexpr std::size_t kSendPlacementLength = 8;

// A SEND packet's place: which receive WQE (by message number) and where in it.
struct SendPlacement {
  std::uint32_t message = 0;
  std::uint32_t offset = 0;
};

inline bool places_directly(const MultipathConfig& multipath) {
  return multipath.entropy_values != 0 && multipath.direct_placement;
}

// The placement header's length at the front of what IBA calls the payload
// of an RC packet with this opcode: 16 for WRITE MIDDLE and LAST, 8 for
// every SEND, 0 otherwise.
inline std::size_t placement_header_length(const MultipathConfig& multipath, const wire::OpcodeInfo& op) {
  if (!places_directly(multipath) || op.transport != wire::Transport::rc) return 0;
  if (op.kind == wire::OpKind::send) return kSendPlacementLength;
  bool later = op.position == wire::Position::middle || op.position == wire::Position::last;
  return op.kind == wire::OpKind::rdma_write && later ? kWritePlacementLength : 0;
}

inline void emit_send_placement(const SendPlacement& placement, std::uint8_t* out) {
  store_be32(out, placement.message);
  store_be32(out + 4, placement.offset);
}

// Moves the placement header from the front of packet.payload: a WRITE's
// into packet.headers.reth, a SEND's into send. False when the payload is
// too short to hold one.
inline bool take_placement_header(const MultipathConfig& multipath, wire::RocePacket& packet,
                                  std::optional<SendPlacement>& send) {
  std::size_t length = placement_header_length(multipath, *packet.op);
  if (length == 0) return true;
  if (packet.payload.size() < length) return false;
  if (packet.op->kind == wire::OpKind::send) {
    send = SendPlacement{load_be32(&packet.payload[0]), load_be32(&packet.payload[4])};
  } else {
    packet.headers.reth = wire::RethRepr::parse(packet.payload.first(length));
  }
  packet.payload = packet.payload.subspan(length);
  return true;
}

}  // namespace uroce::transport
