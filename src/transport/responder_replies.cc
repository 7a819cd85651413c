// What the RC responder sends back beyond ACKs of SENDs and WRITEs: READs
// executed into queued responses, atomics executed once, duplicates
// answered without executing twice, and the transmit of every queued ACK,
// NAK, CNP, READ response and atomic ACK in order.
#include <algorithm>
#include <optional>

#include "transport/psn.h"
#include "transport/registered_copy.h"
#include "transport/responder.h"

namespace uroce {

using transport::psn_add;
using transport::psn_at_or_before;
using transport::psn_diff;
using transport::QueuePair;
using transport::ResponderOutput;

bool transport::Responder::on_read_request(QueuePair& qp, const wire::RocePacket& packet) {
  std::uint32_t psn = packet.headers.bth.psn;
  const wire::RethRepr& reth = *packet.headers.reth;
  if (qp.resp.receiving_send || qp.resp.receiving_write || qp.resp.records.empty()) {
    fail(qp, psn, wire::NakCode::invalid_request);
    return false;
  }
  if ((qp.attr.qp_access_flags & kAccessRemoteRead) == 0) {
    fail(qp, psn, wire::NakCode::remote_access_error);
    return false;
  }
  if (!context_.memory_regions.resolve_remote(reth.rkey, qp.pd, reth.va, reth.dma_length, kAccessRemoteRead, qp.qpn)) {
    fail(qp, psn, wire::NakCode::remote_access_error);
    return false;
  }
  std::uint32_t packets = packets_for(reth.dma_length, context_.mtu(qp));
  qp.resp.msn = psn_add(qp.resp.msn, 1);
  transport::ReadAtomicRecord& record = qp.resp.records[qp.resp.next_record];
  qp.resp.next_record = (qp.resp.next_record + 1) % qp.resp.records.size();
  record = transport::ReadAtomicRecord{true, false, psn, packets, reth.va, reth.rkey, reth.dma_length, 0, qp.resp.msn};

  queue_read_response(qp, psn, reth, qp.resp.msn, packet.headers.bth.extent_payload);
  qp.resp.expected_psn = psn_add(psn, packets);
  return true;
}

bool transport::Responder::on_atomic(QueuePair& qp, const wire::RocePacket& packet) {
  std::uint32_t psn = packet.headers.bth.psn;
  const wire::AtomicEthRepr& atomic = *packet.headers.atomic_eth;
  if (qp.resp.receiving_send || qp.resp.receiving_write || qp.resp.records.empty() || atomic.va % 8 != 0) {
    fail(qp, psn, wire::NakCode::invalid_request);
    return false;
  }
  if ((qp.attr.qp_access_flags & kAccessRemoteAtomic) == 0) {
    fail(qp, psn, wire::NakCode::remote_access_error);
    return false;
  }
  auto target = context_.memory_regions.resolve_remote(atomic.rkey, qp.pd, atomic.va, 8, kAccessRemoteAtomic, qp.qpn);
  if (!target) {
    fail(qp, psn, wire::NakCode::remote_access_error);
    return false;
  }
  std::uint64_t original = 0;
  if (context_.config.carry_payload) {
    transport::copy_registered(&original, *target, sizeof original);
    std::uint64_t updated = original;
    if (packet.op->kind == wire::OpKind::fetch_add) {
      updated = original + atomic.swap_add;
    } else if (original == atomic.compare) {
      updated = atomic.swap_add;
    }
    transport::copy_registered(*target, &updated, sizeof updated);
  }

  qp.resp.msn = psn_add(qp.resp.msn, 1);
  transport::ReadAtomicRecord& record = qp.resp.records[qp.resp.next_record];
  qp.resp.next_record = (qp.resp.next_record + 1) % qp.resp.records.size();
  record = transport::ReadAtomicRecord{true, true, psn, 1, atomic.va, atomic.rkey, 8, original, qp.resp.msn};

  queue_atomic_ack(qp, psn, original, qp.resp.msn);
  qp.resp.expected_psn = psn_add(psn, 1);
  return true;
}

// A READ asked again supersedes what is still queued of its earlier
// responses: the requester wants the stream from the duplicate's PSN, once.
// Without this, a responder paced low by DCQCN answered every go-back-N
// rewind with another copy of every READ in the window, its queue outgrew
// the requester's timeout, and each timeout queued more: the requester ran
// out of retries (RcSoak.DcqcnPacingUnderLossAndEcnMarks, seed 2210511476).
void transport::Responder::drop_queued_responses(QueuePair& qp, std::uint32_t first_psn, std::uint32_t last_psn) {
  std::erase_if(qp.resp.outputs, [&](const ResponderOutput& output) {
    return output.kind == ResponderOutput::Kind::read_response && psn_at_or_before(first_psn, output.psn) &&
           psn_at_or_before(output.psn, last_psn);
  });
}

// A request the responder has already executed: acknowledge it again, replay
// a READ from memory, or return an atomic's saved result. Never execute twice.
void transport::Responder::on_duplicate(QueuePair& qp, const wire::RocePacket& packet) {
  std::uint32_t psn = packet.headers.bth.psn;
  switch (packet.op->kind) {
    case wire::OpKind::rdma_read_request: {
      const wire::RethRepr& reth = *packet.headers.reth;
      for (const transport::ReadAtomicRecord& record : qp.resp.records) {
        if (!record.valid || record.is_atomic) continue;
        std::uint32_t last = psn_add(record.first_psn, std::int64_t{record.packet_count} - 1);
        if (!psn_at_or_before(record.first_psn, psn) || !psn_at_or_before(psn, last)) continue;
        // The re-request may start mid-way; it must stay inside the original.
        std::uint64_t skipped = std::uint64_t(psn_diff(psn, record.first_psn)) * context_.mtu(qp);
        if (reth.rkey != record.rkey || reth.va != record.va + skipped || reth.dma_length != record.length - skipped) {
          return;
        }
        drop_queued_responses(qp, record.first_psn, last);
        return queue_read_response(qp, psn, reth, record.msn, packet.headers.bth.extent_payload);
      }
      return;
    }
    case wire::OpKind::compare_swap:
    case wire::OpKind::fetch_add: {
      for (const transport::ReadAtomicRecord& record : qp.resp.records) {
        if (!record.valid || !record.is_atomic || record.first_psn != psn) continue;
        return queue_atomic_ack(qp, psn, record.atomic_original, record.msn);
      }
      return;
    }
    default:
      // SEND / WRITE: acknowledge everything received so far.
      queue_ack(qp, psn_add(qp.resp.expected_psn, -1));
      return;
  }
}

std::size_t transport::Responder::transmit(QueuePair& qp, MutableByteSpan out, TimeNs now) {
  if (qp.resp.outputs.empty()) return 0;
  ResponderOutput& next = qp.resp.outputs.front();
  if (next.kind == ResponderOutput::Kind::read_response && context_.paced_out(qp, now)) return 0;
  wire::TransportHeaders headers;
  std::size_t payload_length = 0;
  const std::uint8_t* payload = nullptr;
  bool finished = true;

  switch (next.kind) {
    case ResponderOutput::Kind::ack:
      headers.bth.opcode = wire::opcode::kRcAcknowledge;
      headers.bth.psn = next.psn;
      headers.aeth = wire::AethRepr{next.syndrome, next.msn};
      break;
    case ResponderOutput::Kind::atomic_ack:
      headers.bth.opcode = wire::opcode::kRcAtomicAcknowledge;
      headers.bth.psn = next.psn;
      headers.aeth = wire::AethRepr{next.syndrome, next.msn};
      headers.atomic_ack_eth = wire::AtomicAckEthRepr{next.atomic_original};
      break;
    case ResponderOutput::Kind::cnp: {
      // CNPs travel in their own traffic class so switches can prioritise them.
      headers.bth.opcode = wire::opcode::kCnp;
      headers.bth.becn = true;
      AddressVector destination = next.destination;
      destination.traffic_class = static_cast<std::uint8_t>(context_.config.congestion.cnp_dscp << 2);
      auto layout = context_.begin_packet_to(
          destination, next.dest_qp, next.source_port != 0 ? next.source_port : qp.udp_source_port, headers, 0, out,
          next.source_port != 0 ? transport::ev_flow_label(next.source_port) : 0);
      qp.resp.outputs.pop_front();
      if (!layout) return 0;
      ++context_.counters.cnps_sent;
      return context_.finish_packet(out, *layout);
    }
    case ResponderOutput::Kind::read_response: {
      if (std::size_t length = read_response_by_extent(qp, next, out, now)) return length;
      std::uint64_t remaining = next.length - next.offset;
      payload_length = static_cast<std::size_t>(std::min<std::uint64_t>(context_.mtu(qp), remaining));
      bool first = next.offset == 0;
      bool last = remaining <= context_.mtu(qp);
      using namespace wire::opcode;
      headers.bth.opcode = first && last ? kRcRdmaReadResponseOnly
                           : first       ? kRcRdmaReadResponseFirst
                           : last        ? kRcRdmaReadResponseLast
                                         : kRcRdmaReadResponseMiddle;
      headers.bth.psn = next.psn;
      if (first || last) {
        headers.aeth = wire::AethRepr{wire::make_syndrome(wire::AckType::ack, wire::kCreditNoLimit), next.msn};
      }
      auto source = context_.memory_regions.resolve_remote(next.rkey, qp.pd, next.va + next.offset, payload_length,
                                                           kAccessRemoteRead, qp.qpn);
      if (!source) {
        // The region went away under a READ in progress.
        std::uint32_t psn = next.psn;
        fail(qp, psn, wire::NakCode::remote_access_error);
        return transmit(qp, out, now);
      }
      payload = *source;
      finished = last;
      break;
    }
  }
  if (qp.type == QpType::xrc_recv) {  // XRC answers in its own opcode range
    headers.bth.opcode = static_cast<std::uint8_t>(headers.bth.opcode + wire::opcode::kXrcBase);
  }
  // READ responses keep the QP's own port (one path: the requester places
  // them in order); ACKs and NAKs echo the EV of the request they answer.
  std::uint16_t port = next.source_port != 0 ? next.source_port : qp.udp_source_port;
  const AddressVector* reply_to = &qp.attr.ah_attr;
  std::optional<AddressVector> in_ack_class;  // made only where ACKs take a class of their own
  if (context_.config.ack_dscp && next.kind == ResponderOutput::Kind::ack) {
    in_ack_class = qp.attr.ah_attr;
    in_ack_class->traffic_class = static_cast<std::uint8_t>(*context_.config.ack_dscp << 2);
    reply_to = &*in_ack_class;
  }
  auto layout = context_.begin_packet_to(*reply_to, qp.attr.dest_qp_num, port, headers, payload_length, out,
                                         next.source_port != 0 ? transport::ev_flow_label(next.source_port) : 0);
  if (!layout) return 0;
  if (payload_length > 0 && context_.config.carry_payload) {
    transport::copy_registered(&out[layout->payload_offset], payload, payload_length);
  }
  bool data = next.kind == ResponderOutput::Kind::read_response;
  if (finished) {
    qp.resp.outputs.pop_front();
  } else {
    next.offset += payload_length;
    next.psn = psn_add(next.psn, 1);
  }
  std::size_t length = context_.finish_packet(out, *layout);
  if (data) context_.account_data_packet(qp, length, now);
  return length;
}

}  // namespace uroce
