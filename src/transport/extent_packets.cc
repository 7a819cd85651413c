// Payloads by reference (uroce/engine.h, RegionBacking) on arrival and for
// READ responses: an extent packet that came through shared memory gets the
// bytes it names as its payload, read through the port's ExtentSource (or,
// for bytes in the peer's own memory, a stand-in that placing replaces:
// peer_payload.h), and everything after that (PSN, rkey, bounds, receive
// WQE, completion) is the ordinary handling of an ONLY packet; a READ asked
// for by reference is answered with one response naming the bytes, where
// its region has a backing.
#include "transport/engine_core.h"
#include "transport/payload_extent.h"

namespace uroce {

using transport::QueuePair;

bool EngineCore::take_extent_payload(QueuePair& qp, wire::RocePacket& packet, ExtentSource& extents) {
  // A READ request with the bit asks for its response by reference: it has no payload.
  if (packet.op->kind == wire::OpKind::rdma_read_request) return true;
  bool response = packet.op->kind == wire::OpKind::rdma_read_response;
  bool lone = qp.type == QpType::rc && packet.op->position == wire::Position::only &&
              (packet.op->kind == wire::OpKind::send || packet.op->kind == wire::OpKind::rdma_write || response);
  auto named = transport::parse_extent_payload(packet.payload);
  // Selective repeat would hold the packet after a gap and read its payload later.
  if (!lone || !named || qp.resp.reorder) {
    ++counters.malformed_packets;
    return false;
  }
  // Bytes in the peer's own memory stay there until placed; a file's are mapped here.
  const PayloadExtent& extent = named->extent;
  std::optional<ByteSpan> bytes;
  if (!extent.in_process_memory()) {
    bytes = extents.resolve(extent, named->length);
  } else if (named->length > 0 && extents.may_read_process(extent.pid, extent.offset)) {
    bytes = transport::stand_in_payload(named->length);
    if (bytes) peer_payload = transport::PeerPayload{*bytes, extent.pid, extent.offset, &extents, 0};
  }
  if (!bytes) {
    ++counters.extents_unreadable;
    std::uint32_t psn = packet.headers.bth.psn;
    if (response) {
      completer.on_unreadable_read_response(qp, psn);
      return false;
    }
    if (qp.responder_active() && psn == qp.resp.expected_psn) {
      responder.fail(qp, psn, wire::NakCode::remote_operational_error);
    }
    return false;
  }
  packet.payload = *bytes;
  ++counters.extent_packets_received;
  return true;
}

std::size_t transport::Responder::read_response_by_extent(QueuePair& qp, transport::ResponderOutput& next,
                                                          MutableByteSpan out, TimeNs now) {
  std::uint64_t remaining = next.length - next.offset;
  if (!next.by_extent || remaining <= context_.mtu(qp)) return 0;
  const verbs::MemoryRegion* region = context_.memory_regions.find_remote(next.rkey);
  if (region == nullptr || !region->backing) return 0;
  // The checks every response packet gets; the packets' path NAKs a failure.
  auto source = context_.memory_regions.resolve_remote(next.rkey, qp.pd, next.va + next.offset, remaining,
                                                       kAccessRemoteRead, qp.qpn);
  if (!source) return 0;
  wire::TransportHeaders headers;
  headers.bth.opcode = wire::opcode::kRcRdmaReadResponseOnly;
  headers.bth.psn = next.psn;
  headers.bth.extent_payload = true;
  headers.aeth = wire::AethRepr{wire::make_syndrome(wire::AckType::ack, wire::kCreditNoLimit), next.msn};
  auto layout = context_.begin_packet_to(qp.attr.ah_attr, qp.attr.dest_qp_num, qp.udp_source_port, headers,
                                         transport::kExtentPayloadLength, out);
  if (!layout) return 0;
  const RegionBacking& backing = *region->backing;
  PayloadExtent extent{backing.pid, backing.fd, backing.id,
                       backing.offset + static_cast<std::uint64_t>(*source - region->addr)};
  transport::emit_extent_payload({extent, remaining}, &out[layout->payload_offset]);
  ++context_.counters.extent_packets_sent;
  qp.resp.outputs.pop_front();
  std::size_t length = context_.finish_packet(out, *layout);
  context_.account_data_packet(qp, length, now);
  return length;
}

}  // namespace uroce
