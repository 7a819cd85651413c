// The responder's side of payloads by reference (uroce/engine.h,
// RegionBacking): an extent packet that came through shared memory gets the
// bytes it names as its payload, read through the port's ExtentSource;
// everything after that (PSN, rkey, bounds, receive WQE, completion) is the
// responder's ordinary handling of an ONLY packet.
#include "transport/engine_state.h"
#include "transport/payload_extent.h"

namespace uroce {

using transport::QueuePair;

bool EngineState::take_extent_payload(QueuePair& qp, wire::RocePacket& packet, ExtentSource& extents) {
  bool lone_send_or_write = qp.type == QpType::rc && packet.op->position == wire::Position::only &&
                            (packet.op->kind == wire::OpKind::send || packet.op->kind == wire::OpKind::rdma_write);
  auto named = transport::parse_extent_payload(packet.payload);
  // Selective repeat would hold the packet after a gap and read its payload later.
  if (!lone_send_or_write || !named || qp.reorder) {
    ++counters.malformed_packets;
    return false;
  }
  auto bytes = extents.resolve(named->extent, named->length);
  if (!bytes) {
    ++counters.extents_unreadable;
    bool responding = qp.state == QpState::rtr || qp.state == QpState::rts || qp.state == QpState::sqd;
    if (responding && packet.headers.bth.psn == qp.expected_psn) {
      fail_responder(qp, packet.headers.bth.psn, wire::NakCode::remote_operational_error);
    }
    return false;
  }
  packet.payload = *bytes;
  ++counters.extent_packets_received;
  return true;
}

}  // namespace uroce
