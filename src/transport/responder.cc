// The RC responder: checks each request's PSN against the expected one,
// executes SEND and WRITE after checking keys, permissions and bounds, and
// queues ACKs and NAKs in the order they must go out (READs, atomics,
// duplicates and the transmit itself: responder_replies.cc).
#include "transport/responder.h"

#include <algorithm>
#include <cstring>

#include "transport/psn.h"
#include "transport/registered_copy.h"
#include "wire/ip_datagram.h"

namespace uroce {

using transport::psn_add;
using transport::psn_at_or_before;
using transport::psn_diff;
using transport::QueuePair;
using transport::ResponderOutput;

namespace {

bool is_first_or_only(wire::Position position) {
  return position == wire::Position::first || position == wire::Position::only;
}
bool is_last_or_only(wire::Position position) {
  return position == wire::Position::last || position == wire::Position::only;
}

}  // namespace

void transport::Responder::queue_ack(QueuePair& qp, std::uint32_t psn) {
  if (!qp.reliable()) return;
  // Coalesce: a newer ACK replaces one still waiting at the tail.
  if (!qp.resp.outputs.empty()) {
    ResponderOutput& tail = qp.resp.outputs.back();
    if (tail.kind == ResponderOutput::Kind::ack && wire::aeth_ack_type(tail.syndrome) == wire::AckType::ack) {
      tail.psn = psn;
      tail.msn = qp.resp.msn;
      tail.source_port = context_.echoed_port(qp);
      return;
    }
  }
  ResponderOutput ack;
  ack.kind = ResponderOutput::Kind::ack;
  ack.psn = psn;
  ack.syndrome = wire::make_syndrome(wire::AckType::ack, wire::kCreditNoLimit);
  ack.msn = qp.resp.msn;
  ack.source_port = context_.echoed_port(qp);
  qp.resp.outputs.push_back(ack);
  context_.mark_ready(qp);
}

void transport::Responder::queue_read_response(QueuePair& qp, std::uint32_t psn, const wire::RethRepr& reth,
                                               std::uint32_t msn, bool by_extent) {
  ResponderOutput response;
  response.kind = ResponderOutput::Kind::read_response;
  response.psn = psn;
  response.va = reth.va;
  response.rkey = reth.rkey;
  response.length = reth.dma_length;
  response.msn = msn;
  response.by_extent = by_extent;
  qp.resp.outputs.push_back(response);
  context_.mark_ready(qp);
}

void transport::Responder::queue_atomic_ack(QueuePair& qp, std::uint32_t psn, std::uint64_t original,
                                            std::uint32_t msn) {
  ResponderOutput ack;
  ack.kind = ResponderOutput::Kind::atomic_ack;
  ack.psn = psn;
  ack.syndrome = wire::make_syndrome(wire::AckType::ack, wire::kCreditNoLimit);
  ack.msn = msn;
  ack.atomic_original = original;
  ack.source_port = context_.echoed_port(qp);
  qp.resp.outputs.push_back(ack);
  context_.mark_ready(qp);
}

void transport::Responder::queue_nak(QueuePair& qp, std::uint32_t psn, wire::AckType type, std::uint8_t code,
                                     std::optional<std::uint32_t> msn) {
  if (!qp.reliable()) return;  // UC drops silently
  ResponderOutput nak;
  nak.kind = ResponderOutput::Kind::ack;
  nak.psn = psn;
  nak.syndrome = wire::make_syndrome(type, code);
  nak.msn = msn.value_or(qp.resp.msn);
  nak.source_port = context_.echoed_port(qp);
  qp.resp.outputs.push_back(nak);
  if (type == wire::AckType::rnr_nak) {
    ++context_.counters.rnr_naks_sent;
  } else {
    ++context_.counters.naks_sent;
  }
  context_.mark_ready(qp);
}

// A fatal request error: NAK it, then the QP goes to ERR (IBTA class B/C
// responder errors). The NAK still goes out; everything else is flushed.
void transport::Responder::fail(QueuePair& qp, std::uint32_t psn, wire::NakCode code) {
  if (qp.type == QpType::uc) {
    // UC: the offending message is dropped, the QP carries on (IBTA 9.7.5.2).
    return abandon_message(qp);
  }
  // IBTA's affiliated asynchronous errors for a responder that fails a request.
  context_.raise(code == wire::NakCode::invalid_request       ? AsyncEventType::qp_req_err
                 : code == wire::NakCode::remote_access_error ? AsyncEventType::qp_access_err
                                                              : AsyncEventType::qp_fatal,
                 qp.qpn);
  context_.move_to_error(qp);
  queue_nak(qp, psn, wire::AckType::nak, static_cast<std::uint8_t>(code));
}

bool transport::Responder::payload_length_ok(const QueuePair& qp, const wire::RocePacket& packet) const {
  std::size_t length = packet.payload.size();
  switch (packet.op->position) {
    case wire::Position::first:
    case wire::Position::middle:
      return length == context_.mtu(qp);
    case wire::Position::last:
      return length >= 1 && length <= context_.mtu(qp);
    case wire::Position::only:
      return length <= context_.mtu(qp) || packet.headers.bth.extent_payload;
  }
  return false;
}

void transport::Responder::complete_receive(QueuePair& qp, const wire::RocePacket& packet, std::uint64_t byte_len,
                                            WcOpcode opcode) {
  transport::RecvWqe& wqe = *qp.resp.current_recv;
  WorkCompletion wc;
  wc.wr_id = wqe.wr_id;
  wc.opcode = opcode;
  wc.byte_len = static_cast<std::uint32_t>(byte_len);
  wc.qp_num = qp.qpn;
  wc.src_qp = qp.attr.dest_qp_num;
  if (packet.headers.imm_dt) {
    wc.wc_flags |= kWcWithImm;
    wc.imm_data = packet.headers.imm_dt->imm;
  }
  if (packet.headers.ieth) {
    wc.wc_flags |= kWcWithInv;
    wc.imm_data = packet.headers.ieth->rkey;
  }
  qp.resp.current_recv.reset();
  context_.complete(qp.recv_cq, wc, packet.headers.bth.solicited_event);
}

transport::RecvWqe* transport::Responder::take_receive(QueuePair& qp) {
  if (!qp.resp.current_recv) {
    std::deque<transport::RecvWqe>* queue = &qp.resp.recv_queue;
    if (qp.srq != 0) {
      auto srq = context_.srqs.find(qp.srq);
      if (srq == context_.srqs.end()) return nullptr;
      queue = &srq->second.queue;
    }
    if (queue->empty()) return nullptr;
    recheck_receive(queue->front());
    qp.resp.current_recv = std::move(queue->front());
    queue->pop_front();
    ++qp.resp.receives_taken;
    if (qp.srq != 0) {
      SharedReceiveQueue& shared = context_.srqs.find(qp.srq)->second;
      if (shared.limit != 0 && shared.queue.size() < shared.limit) {
        shared.limit = 0;  // one event per arming, as ibv_modify_srq defines it
        context_.raise(AsyncEventType::srq_limit_reached, qp.srq);
      }
    }
  }
  return &*qp.resp.current_recv;
}

bool transport::RoleContext::still_registered(const std::vector<transport::Segment>& segments, std::uint32_t pd,
                                              std::uint64_t& checked_at) const {
  if (checked_at == memory_regions.changes()) return true;
  for (const transport::Segment& segment : segments) {
    if (!memory_regions.resolve_local(segment.lkey, pd, reinterpret_cast<std::uintptr_t>(segment.data),
                                      segment.length, true)) {
      return false;
    }
  }
  checked_at = memory_regions.changes();
  return true;
}

void transport::Responder::recheck_receive(transport::RecvWqe& wqe) const {
  if (wqe.local_error == WcStatus::success && !context_.still_registered(wqe.segments, wqe.pd, wqe.registrations)) {
    wqe.local_error = WcStatus::loc_prot_err;
  }
}

void transport::Responder::fail_receive(QueuePair& qp, WcStatus status) {
  WorkCompletion wc{.wr_id = qp.resp.current_recv->wr_id, .status = status, .opcode = WcOpcode::recv, .qp_num = qp.qpn};
  qp.resp.current_recv.reset();
  context_.complete(qp.recv_cq, wc);
}

void transport::Responder::abandon_message(QueuePair& qp) {
  if (qp.resp.receiving_send || qp.resp.receiving_write) ++context_.counters.dropped_messages;
  qp.resp.receiving_send = false;  // the receive WQE stays for the next message
  qp.resp.receiving_write = false;
  qp.resp.send_offset = 0;
}

// UC: no ACKs, no retransmission. A message that loses a packet is dropped;
// the responder resynchronises on the next FIRST or ONLY packet.
void transport::Responder::uc_on_request(QueuePair& qp, const wire::RocePacket& packet) {
  std::uint32_t psn = packet.headers.bth.psn;
  bool starts = is_first_or_only(packet.op->position);
  bool in_message = qp.resp.receiving_send || qp.resp.receiving_write;
  if (starts) {
    if (in_message) abandon_message(qp);  // the previous message lost its tail
  } else if (!in_message || psn != qp.resp.expected_psn) {
    ++context_.counters.out_of_sequence;
    abandon_message(qp);
    return;
  }
  qp.resp.expected_psn = psn_add(psn, 1);
  bool accepted = packet.op->kind == wire::OpKind::send ? on_send(qp, packet) : on_write(qp, packet);
  if (!accepted) abandon_message(qp);
}

// UD: each datagram is a whole message (its Q_Key was checked on arrival). It
// needs a posted receive (there is no RNR on UD: without one it is dropped); the buffer gets
// the 40-byte GRH area first, then the payload.
void transport::Responder::on_datagram(QueuePair& qp, const wire::RocePacket& packet, ByteSpan ip_header) {
  if (!qp.responder_active()) {
    return;
  }
  transport::RecvWqe* receive = take_receive(qp);  // the Q_Key was checked on arrival
  if (receive == nullptr) {
    ++context_.counters.dropped_messages;
    return;
  }
  transport::RecvWqe& wqe = *receive;
  std::uint64_t needed = kGrhLength + packet.payload.size();
  if (wqe.local_error != WcStatus::success || needed > wqe.capacity) {
    return fail_receive(qp, wqe.local_error != WcStatus::success ? wqe.local_error : WcStatus::loc_len_err);
  }
  std::uint8_t grh[kGrhLength] = {};
  std::size_t header_length = std::min<std::size_t>(ip_header.size(), kGrhLength);
  std::memcpy(grh + (kGrhLength - header_length), ip_header.data(), header_length);
  if (context_.config.carry_payload) {
    transport::scatter(wqe.segments, 0, grh, kGrhLength);
    transport::scatter(wqe.segments, kGrhLength, packet.payload.data(), packet.payload.size());
  }
  WorkCompletion wc;
  wc.wr_id = wqe.wr_id;
  wc.opcode = WcOpcode::recv;
  wc.byte_len = static_cast<std::uint32_t>(needed);
  wc.qp_num = qp.qpn;
  wc.src_qp = packet.headers.deth->src_qp;
  wc.wc_flags = kWcGrh;
  wc.network_header_type = wire::ip_version(ip_header) == 4 ? kNetworkIpv4 : kNetworkIpv6;
  if (packet.headers.imm_dt) {
    wc.wc_flags |= kWcWithImm;
    wc.imm_data = packet.headers.imm_dt->imm;
  }
  qp.resp.current_recv.reset();
  context_.complete(qp.recv_cq, wc, packet.headers.bth.solicited_event);
}

void transport::Responder::on_request(QueuePair& qp, const wire::RocePacket& packet, ByteSpan bytes) {
  if (!qp.responder_active()) {
    return;
  }
  if (qp.type == QpType::uc) return uc_on_request(qp, packet);
  if (transport::placement_header_length(qp.multipath, *packet.op) == 0) return rc_on_request(qp, packet, bytes, {});
  wire::RocePacket placed = packet;
  std::optional<transport::SendPlacement> send;
  if (!transport::take_placement_header(qp.multipath, placed, send)) {
    return fail(qp, packet.headers.bth.psn, wire::NakCode::invalid_request);
  }
  rc_on_request(qp, placed, bytes, send);
}

void transport::Responder::rc_on_request(QueuePair& qp, const wire::RocePacket& packet, ByteSpan bytes,
                                         const std::optional<transport::SendPlacement>& send) {
  std::uint32_t psn = packet.headers.bth.psn;
  std::int32_t distance = psn_diff(psn, qp.resp.expected_psn);
  if (distance > 0) {
    ++context_.counters.out_of_sequence;
    if (qp.resp.reorder) return hold_out_of_order(qp, packet, bytes, send);
    if (!qp.resp.sequence_nak_sent) {
      qp.resp.sequence_nak_sent = true;
      queue_nak(qp, qp.resp.expected_psn, wire::AckType::nak,
                static_cast<std::uint8_t>(wire::NakCode::psn_sequence_error));
    }
    return;
  }
  if (distance < 0) {
    ++context_.counters.duplicate_requests;
    on_duplicate(qp, packet);
    return;
  }
  qp.resp.sequence_nak_sent = false;
  execute_request(qp, packet, false, send);
  if (qp.resp.reorder) deliver_held(qp, psn);
}

// Executes the request at the expected PSN and, when it is accepted, moves
// the expected PSN past it.
void transport::Responder::execute_request(QueuePair& qp, const wire::RocePacket& packet, bool placed,
                                           const std::optional<transport::SendPlacement>& send) {
  std::uint32_t psn = packet.headers.bth.psn;
  bool accepted = false;
  switch (packet.op->kind) {
    case wire::OpKind::send: accepted = on_send(qp, packet, placed, send); break;
    case wire::OpKind::rdma_write: accepted = on_write(qp, packet, placed); break;
    // READ and atomics move the expected PSN and queue their responses themselves.
    case wire::OpKind::rdma_read_request: on_read_request(qp, packet); return;
    case wire::OpKind::compare_swap:
    case wire::OpKind::fetch_add: on_atomic(qp, packet); return;
    default:
      return fail(qp, psn, wire::NakCode::invalid_request);
  }
  if (!accepted) return;
  qp.resp.expected_psn = psn_add(qp.resp.expected_psn, 1);
  if (packet.headers.bth.ack_req) queue_ack(qp, psn);
}

bool transport::Responder::on_send(QueuePair& qp, const wire::RocePacket& packet, bool placed,
                                   const std::optional<transport::SendPlacement>& send) {
  std::uint32_t psn = packet.headers.bth.psn;
  wire::Position position = packet.op->position;
  if (is_first_or_only(position) == qp.resp.receiving_send || qp.resp.receiving_write) {
    fail(qp, psn, wire::NakCode::invalid_request);
    return false;
  }
  if (!payload_length_ok(qp, packet)) {
    fail(qp, psn, wire::NakCode::invalid_request);
    return false;
  }
  if (is_first_or_only(position)) {
    if (take_receive(qp) == nullptr) {
      queue_nak(qp, psn, wire::AckType::rnr_nak, qp.attr.min_rnr_timer);
      return false;
    }
    qp.resp.receiving_send = true;
    qp.resp.send_offset = 0;
  }
  // Direct placement: the packet's own placement header must name exactly
  // the receive and the offset the message has got to.
  if (send && (send->message != qp.resp.receives_taken - 1 || send->offset != qp.resp.send_offset)) {
    fail(qp, psn, wire::NakCode::invalid_request);
    return false;
  }
  transport::RecvWqe& wqe = *qp.resp.current_recv;
  recheck_receive(wqe);
  if (wqe.local_error != WcStatus::success || qp.resp.send_offset + packet.payload.size() > wqe.capacity) {
    WcStatus status = wqe.local_error != WcStatus::success ? wqe.local_error : WcStatus::loc_len_err;
    fail_receive(qp, status);
    fail(qp, psn,
         status == WcStatus::loc_len_err ? wire::NakCode::invalid_request : wire::NakCode::remote_operational_error);
    return false;
  }
  if (context_.config.carry_payload && !placed) {
    transport::scatter_payload(context_.peer_payload, wqe.segments, qp.resp.send_offset, packet.payload);
  }
  qp.resp.send_offset += packet.payload.size();
  if (is_last_or_only(position)) {
    if (packet.headers.ieth) context_.memory_regions.invalidate_rkey(packet.headers.ieth->rkey, qp.pd, qp.qpn);
    qp.resp.receiving_send = false;
    qp.resp.msn = psn_add(qp.resp.msn, 1);
    complete_receive(qp, packet, qp.resp.send_offset, WcOpcode::recv);
  }
  return true;
}

bool transport::Responder::on_write(QueuePair& qp, const wire::RocePacket& packet, bool placed) {
  std::uint32_t psn = packet.headers.bth.psn;
  wire::Position position = packet.op->position;
  if (is_first_or_only(position) == qp.resp.receiving_write || qp.resp.receiving_send ||
      !payload_length_ok(qp, packet)) {
    fail(qp, psn, wire::NakCode::invalid_request);
    return false;
  }
  bool with_imm = packet.headers.imm_dt.has_value();
  if (with_imm && take_receive(qp) == nullptr) {
    // Check before touching memory: the retry must find it unwritten.
    queue_nak(qp, psn, wire::AckType::rnr_nak, qp.attr.min_rnr_timer);
    return false;
  }
  bool atomic_write = wire::opcode::is_atomic_write(packet.op->value);
  if (is_first_or_only(position)) {
    const wire::RethRepr& reth = *packet.headers.reth;
    bool length_ok = position == wire::Position::only ? packet.payload.size() == reth.dma_length
                                                      : reth.dma_length > packet.payload.size();
    // An atomic write is 8 bytes at an 8-byte boundary (IBTA 1.5), as atomics are.
    if (atomic_write) length_ok = length_ok && reth.dma_length == 8 && reth.va % 8 == 0;
    if (!length_ok) {
      fail(qp, psn, wire::NakCode::invalid_request);
      return false;
    }
    if ((qp.attr.qp_access_flags & kAccessRemoteWrite) == 0) {
      fail(qp, psn, wire::NakCode::remote_access_error);
      return false;
    }
    qp.resp.receiving_write = true;
    qp.resp.write_va = reth.va;
    qp.resp.write_rkey = reth.rkey;
    qp.resp.write_remaining = reth.dma_length;
    qp.resp.write_length = reth.dma_length;
    // The whole message must fit before its first byte lands.
    if (!context_.memory_regions.resolve_remote(reth.rkey, qp.pd, reth.va, reth.dma_length, kAccessRemoteWrite,
                                                qp.qpn)) {
      fail(qp, psn, wire::NakCode::remote_access_error);
      return false;
    }
  }
  std::size_t length = packet.payload.size();
  bool last = is_last_or_only(position);
  if (length > qp.resp.write_remaining || (last && length != qp.resp.write_remaining)) {
    fail(qp, psn, wire::NakCode::invalid_request);
    return false;
  }
  // Direct placement: a MIDDLE or LAST packet's own RETH must name exactly
  // where the message has got to.
  const std::optional<wire::RethRepr>& own = packet.headers.reth;
  if (!is_first_or_only(position) && own &&
      (own->va != qp.resp.write_va || own->rkey != qp.resp.write_rkey || own->dma_length != qp.resp.write_remaining)) {
    fail(qp, psn, wire::NakCode::invalid_request);
    return false;
  }
  auto target = context_.memory_regions.resolve_remote(qp.resp.write_rkey, qp.pd, qp.resp.write_va, length,
                                                       kAccessRemoteWrite, qp.qpn);
  if (!target) {
    fail(qp, psn, wire::NakCode::remote_access_error);
    return false;
  }
  if (atomic_write && context_.config.carry_payload && reinterpret_cast<std::uintptr_t>(*target) % 8 == 0) {
    std::uint64_t value;  // in one store: a reader never sees half of it
    std::memcpy(&value, packet.payload.data(), sizeof value);
    transport::store_registered(reinterpret_cast<std::uint64_t*>(*target), value);
  } else if (length > 0 && context_.config.carry_payload && !placed) {
    transport::place_payload(context_.peer_payload, *target, packet.payload.data(), length);
  }
  qp.resp.write_va += length;
  qp.resp.write_remaining -= length;
  if (last) {
    qp.resp.receiving_write = false;
    qp.resp.msn = psn_add(qp.resp.msn, 1);
    if (with_imm) {
      complete_receive(qp, packet, qp.resp.write_length, WcOpcode::recv_rdma_with_imm);
    }
  }
  return true;
}

}  // namespace uroce
