// The requester: segments send-queue WQEs into request packets within the
// PSN window, the read/atomic limit and the pace, and resends from where the
// completer (completer.cc) rewinds it.
#include "transport/requester.h"

#include <algorithm>
#include <cstring>

#include "transport/direct_placement.h"
#include "transport/payload_extent.h"
#include "transport/psn.h"

namespace uroce {

using transport::psn_add;
using transport::psn_at_or_before;
using transport::psn_before;
using transport::psn_diff;
using transport::QueuePair;
using transport::SendWqe;

namespace {

std::uint8_t send_opcode(WrOpcode op, wire::Position position) {
  using namespace wire::opcode;
  if (op == WrOpcode::atomic_write) return kRcAtomicWrite;  // 8 bytes: one packet
  bool imm = op == WrOpcode::send_with_imm || op == WrOpcode::rdma_write_with_imm;
  bool inv = op == WrOpcode::send_with_inv;
  bool write = op == WrOpcode::rdma_write || op == WrOpcode::rdma_write_with_imm;
  switch (position) {
    case wire::Position::first: return write ? kRcRdmaWriteFirst : kRcSendFirst;
    case wire::Position::middle: return write ? kRcRdmaWriteMiddle : kRcSendMiddle;
    case wire::Position::last:
      if (write) return imm ? kRcRdmaWriteLastWithImmediate : kRcRdmaWriteLast;
      return imm ? kRcSendLastWithImmediate : inv ? kRcSendLastWithInvalidate : kRcSendLast;
    case wire::Position::only:
      if (write) return imm ? kRcRdmaWriteOnlyWithImmediate : kRcRdmaWriteOnly;
      return imm ? kRcSendOnlyWithImmediate : inv ? kRcSendOnlyWithInvalidate : kRcSendOnly;
  }
  return kRcSendOnly;
}

wire::Position position_of(std::uint32_t index, std::uint32_t count) {
  if (count == 1) return wire::Position::only;
  if (index == 0) return wire::Position::first;
  return index + 1 == count ? wire::Position::last : wire::Position::middle;
}

}  // namespace

std::uint32_t transport::SendWqe::last_psn() const { return psn_add(first_psn, std::int64_t{packet_count} - 1); }

// The local ACK timeout, or the tail timeout while few PSNs are in flight. An
// infinite local ACK timeout (0) stays infinite.
void transport::Requester::arm_retransmit_timer(QueuePair& qp, TimeNs now) const {
  TimeNs wait = transport::ack_timeout_ns(qp.attr.timeout);
  qp.comp.tail_deadline = false;
  if (wait != kNever && qp.tail_timeout_ns != 0 && qp.tail_timeout_ns < wait && qp.req.any_sent) {
    std::int64_t in_flight = psn_diff(psn_add(qp.req.highest_sent_psn, 1), unacked_psn(qp));
    if (qp.comp.sacks) in_flight -= qp.comp.sacks->marked_count();
    if (in_flight <= static_cast<std::int64_t>(qp.tail_timeout_packets)) {
      wait = qp.tail_timeout_ns;
      qp.comp.tail_deadline = true;
    }
  }
  qp.comp.retransmit_deadline = wait == kNever ? kNever : now + wait;
  // A loss probe first, while it comes well before the timeout.
  bool probe = qp.loss_probe_ns != 0 && wait != kNever && qp.loss_probe_ns < wait;
  qp.req.probe_interval = qp.loss_probe_ns;
  qp.req.probe_deadline = probe ? now + qp.loss_probe_ns : kNever;
  qp.req.probes_unanswered = 0;
}

std::uint32_t transport::Requester::unacked_psn(const QueuePair& qp) const {
  for (const SendWqe& wqe : qp.req.send_queue) {
    if (!wqe.started) break;
    if (wqe.done) continue;
    if (wqe.opcode == WrOpcode::rdma_read) {
      return psn_add(wqe.first_psn, static_cast<std::int64_t>(wqe.read_received / context_.mtu(qp)));
    }
    // An atomic is unacknowledged until its own ATOMIC ACK arrives, whatever
    // later ACKs say: only that carries the result.
    if (wqe.is_read_or_atomic()) return wqe.first_psn;
    // An ACK in the middle of a long message acknowledges its first part.
    std::uint32_t after_ack = psn_add(qp.comp.acked_psn, 1);
    return psn_before(wqe.first_psn, after_ack) ? after_ack : wqe.first_psn;
  }
  return qp.req.next_psn;
}

bool transport::Requester::window_full(const QueuePair& qp, std::uint32_t psn) const {
  if (!qp.reliable()) return false;  // nothing is ever acknowledged on UC or UD
  return psn_diff(psn, unacked_psn(qp)) >= static_cast<std::int32_t>(context_.config.max_inflight_packets);
}

// A SEND or WRITE by reference takes one PSN but makes the peer copy as
// many MTUs as its packets would have carried: counted so, the window holds
// as many bytes in flight as on the packets' path (max_inflight_packets
// MTUs), and not that many whole messages, which at 8 MiB each made the
// peer copy for longer than the retransmit timeout. A message larger than
// the whole window still goes alone.
bool transport::Requester::extent_window_full(const QueuePair& qp, std::uint64_t length) const {
  std::int64_t in_flight = psn_diff(qp.req.next_psn, unacked_psn(qp));
  for (const SendWqe& wqe : qp.req.send_queue) {
    if (!wqe.started) break;
    if (!wqe.done && wqe.by_extent && wqe.opcode != WrOpcode::rdma_read) {
      in_flight += static_cast<std::int64_t>(packets_for(wqe.length, context_.mtu(qp))) - 1;
    }
  }
  std::int64_t needed = packets_for(length, context_.mtu(qp));
  return in_flight > 0 && in_flight + needed > static_cast<std::int64_t>(context_.config.max_inflight_packets);
}

std::size_t transport::Requester::transmit(QueuePair& qp, MutableByteSpan out, TimeNs now) {
  if (!qp.requester_active()) return 0;
  if (qp.comp.rnr_resume_at != kNever) return 0;
  if (qp.req.probe_pending) {
    if (std::size_t length = send_loss_probe(qp, out, now); length > 0) return length;
  }
  if (qp.comp.sacks && (!qp.req.trimmed_resends.empty() || qp.comp.sacks->recovering())) {
    if (context_.paced_out(qp, now)) return 0;
    std::size_t length = resend_trimmed(qp, out, now);
    if (length == 0) length = resend_selected(qp, out, now);
    if (length > 0) {
      context_.account_data_packet(qp, length, now);
      return length;
    }
  }
  // A WQE finished while the cursor was on it (late responses to a READ we
  // were about to ask again) needs nothing more; a local operation (bind,
  // local invalidate) is done here, in queue order, and completes in order.
  bool local_done = false;
  while (qp.req.send_cursor < qp.req.send_queue.size()) {
    SendWqe& next = qp.req.send_queue[qp.req.send_cursor];
    if (!next.done && !(next.is_local_operation() && !next.started && qp.state == QpState::rts)) break;
    if (!next.done) {
      WcStatus status = execute_local_operation(qp, next);
      if (status != WcStatus::success) {
        context_.fail_request(qp, qp.req.next_psn, status);
        return 0;
      }
      local_done = true;
    }
    ++qp.req.send_cursor;
    qp.req.send_cursor_packet = 0;
  }
  if (local_done) context_.retire_completed(qp);
  if (qp.req.send_cursor >= qp.req.send_queue.size()) return 0;
  if (context_.paced_out(qp, now)) return 0;
  SendWqe& wqe = qp.req.send_queue[qp.req.send_cursor];

  if (!wqe.started) {
    if (qp.state == QpState::sqd) return 0;
    if (wqe.local_error != WcStatus::success) {
      wqe.started = true;
      wqe.first_psn = qp.req.next_psn;
      wqe.packet_count = 0;
      context_.fail_request(qp, qp.req.next_psn, wqe.local_error);
      return 0;
    }
    if (wqe.fence && qp.req.outstanding_read_atomic > 0) return 0;
    std::uint32_t read_atomic_limit = std::max<std::uint32_t>(1, qp.attr.max_rd_atomic);
    if (wqe.is_read_or_atomic() && qp.req.outstanding_read_atomic >= read_atomic_limit) return 0;
    if (window_full(qp, qp.req.next_psn)) return 0;
    // A local peer reads a long message's bytes itself: one packet names
    // them. A READ asks the peer for that; it reserves its PSNs either way.
    bool read = wqe.opcode == WrOpcode::rdma_read;
    bool by_extent = (wqe.extent || read) && qp.req.peer_local && wqe.length > context_.mtu(qp) && !qp.req.paths &&
                     !qp.comp.sacks && qp.type == QpType::rc;
    if (by_extent && !read && extent_window_full(qp, wqe.length)) return 0;
    wqe.started = true;
    wqe.first_psn = qp.req.next_psn;
    wqe.place_early = may_place_early(qp, wqe);
    if (wqe.takes_receive()) wqe.receive_message = qp.req.receive_messages_started++;
    bool atomic = wqe.opcode == WrOpcode::atomic_cmp_and_swp || wqe.opcode == WrOpcode::atomic_fetch_and_add;
    wqe.by_extent = by_extent;
    wqe.packet_count = atomic || (wqe.by_extent && !read)
                           ? 1
                           : packets_for(wqe.length, context_.mtu(qp));
    qp.req.next_psn = psn_add(qp.req.next_psn, wqe.packet_count);
    if (wqe.is_read_or_atomic()) ++qp.req.outstanding_read_atomic;
  } else {
    if (window_full(qp, psn_add(wqe.first_psn, qp.req.send_cursor_packet))) return 0;
  }

  std::uint32_t index = qp.req.send_cursor_packet;
  std::size_t length = send_request_packet(qp, wqe, index, out, now);
  if (length == 0) return 0;
  // READ and atomic requests are one packet whatever PSNs they reserve.
  bool whole = wqe.is_read_or_atomic() || index + 1 >= wqe.packet_count;
  if (whole) {
    ++qp.req.send_cursor;
    qp.req.send_cursor_packet = 0;
  } else {
    ++qp.req.send_cursor_packet;
  }
  context_.account_data_packet(qp, length, now);
  if (!qp.reliable()) {
    // Unreliable: a UC or UD WQE is complete once its last packet is on the wire.
    if (whole) {
      wqe.done = true;
      context_.retire_completed(qp);
    }
  } else if (qp.comp.retransmit_deadline == kNever || qp.comp.tail_deadline) {
    // A tail deadline holds only while few PSNs are in flight: this one adds to them.
    arm_retransmit_timer(qp, now);
  }
  return length;
}

// Selective repeat: sends the next PSN in the scoreboard's resend range that
// the responder does not hold. A READ is asked again only from its first
// missing response; PSNs it merely reserves are skipped.
std::size_t transport::Requester::resend_selected(QueuePair& qp, MutableByteSpan out, TimeNs now) {
  transport::SackScoreboard& sacks = *qp.comp.sacks;
  std::size_t wqe_index = 0;
  while (sacks.recovering()) {
    std::uint32_t psn = sacks.recovery_next();
    if (!qp.req.any_sent || psn_before(qp.req.highest_sent_psn, psn)) {
      sacks.advance_to(sacks.recovery_end());  // never sent yet: the cursor will send it
      break;
    }
    if (sacks.marked(psn)) {
      sacks.advance_to(psn_add(psn, 1));
      continue;
    }
    // WQEs are in PSN order: carry on from the one the last PSN fell in.
    while (wqe_index < qp.req.send_queue.size() && qp.req.send_queue[wqe_index].started &&
           psn_before(qp.req.send_queue[wqe_index].last_psn(), psn)) {
      ++wqe_index;
    }
    if (wqe_index >= qp.req.send_queue.size() || !qp.req.send_queue[wqe_index].started ||
        psn_before(psn, qp.req.send_queue[wqe_index].first_psn)) {
      sacks.advance_to(psn_add(psn, 1));
      continue;
    }
    SendWqe& wqe = qp.req.send_queue[wqe_index];
    std::uint32_t index = static_cast<std::uint32_t>(psn_diff(psn, wqe.first_psn));
    if (wqe.is_read_or_atomic()) {
      std::uint32_t resume =
          wqe.opcode == WrOpcode::rdma_read ? static_cast<std::uint32_t>(wqe.read_received / context_.mtu(qp)) : 0;
      sacks.advance_to(psn_add(wqe.last_psn(), 1));
      if (wqe.done || index != resume) continue;
    } else {
      sacks.advance_to(psn_add(psn, 1));
      if (wqe.done || psn_at_or_before(psn, qp.comp.acked_psn)) continue;
    }
    std::size_t length = send_request_packet(qp, wqe, index, out, now);
    if (length > 0) return length;
  }
  return 0;
}

std::size_t transport::Requester::send_request_packet(QueuePair& qp, SendWqe& wqe, std::uint32_t index,
                                                      MutableByteSpan out, TimeNs now, bool ack_request) {
  std::uint32_t psn = psn_add(wqe.first_psn, index);
  wire::TransportHeaders headers;
  headers.bth.psn = psn;
  std::uint32_t payload_length = 0;
  std::uint64_t payload_offset = 0;
  bool last_packet = true;
  std::size_t placement_header = 0;  // multipath direct placement: its length at the front of the payload

  switch (wqe.opcode) {
    case WrOpcode::rdma_read: {
      // A re-request after lost responses asks only for what is missing.
      std::uint64_t offset = std::uint64_t{index} * context_.mtu(qp);
      headers.bth.opcode = wire::opcode::kRcRdmaReadRequest;
      headers.reth = wire::RethRepr{wqe.remote_addr + offset, wqe.rkey, static_cast<std::uint32_t>(wqe.length - offset)};
      headers.bth.extent_payload = wqe.by_extent;
      break;
    }
    case WrOpcode::atomic_cmp_and_swp:
    case WrOpcode::atomic_fetch_and_add: {
      bool swap = wqe.opcode == WrOpcode::atomic_cmp_and_swp;
      headers.bth.opcode = swap ? wire::opcode::kRcCompareSwap : wire::opcode::kRcFetchAdd;
      headers.atomic_eth = wire::AtomicEthRepr{wqe.remote_addr, wqe.rkey, swap ? wqe.swap : wqe.compare_add,
                                               swap ? wqe.compare_add : 0};
      break;
    }
    default: {
      wire::Position position = position_of(index, wqe.packet_count);
      last_packet = position == wire::Position::last || position == wire::Position::only;
      headers.bth.opcode = send_opcode(wqe.opcode, position);
      if (qp.type == QpType::uc) headers.bth.opcode = static_cast<std::uint8_t>(headers.bth.opcode + wire::opcode::kUcBase);
      if (qp.type == QpType::ud) {
        bool imm = wqe.opcode == WrOpcode::send_with_imm;
        headers.bth.opcode = imm ? wire::opcode::kUdSendOnlyWithImmediate : wire::opcode::kUdSendOnly;
        headers.deth = wire::DethRepr{wqe.ud_qkey, qp.qpn};
      }
      payload_offset = std::uint64_t{index} * context_.mtu(qp);
      payload_length =
          static_cast<std::uint32_t>(std::min<std::uint64_t>(context_.mtu(qp), wqe.length - payload_offset));
      if (wqe.by_extent) {
        payload_length = transport::kExtentPayloadLength;
        headers.bth.extent_payload = true;
      }
      headers.bth.solicited_event = last_packet && wqe.solicited;
      const wire::OpcodeInfo* op = wire::find_opcode(headers.bth.opcode);
      if (op->has(wire::kExtReth)) headers.reth = wire::RethRepr{wqe.remote_addr, wqe.rkey, wqe.length};
      if (op->has(wire::kExtImmDt)) headers.imm_dt = wire::ImmDtRepr{wqe.imm_data};
      if (op->has(wire::kExtIeth)) headers.ieth = wire::IethRepr{wqe.invalidate_rkey};
      placement_header = qp.type == QpType::rc ? transport::placement_header_length(qp.multipath, *op) : 0;
      headers.bth.place_early = wqe.place_early;
      break;
    }
  }
  if (qp.type == QpType::xrc_send) {  // an RC opcode in the XRC range, naming the remote SRQ
    headers.bth.opcode = static_cast<std::uint8_t>(headers.bth.opcode + wire::opcode::kXrcBase);
    headers.xrceth = wire::XrcethRepr{wqe.xrc_srqn};
  }
  if (qp.reliable()) {  // UC has no acknowledgements to ask for
    ++qp.req.packets_since_ack_request;
    std::uint32_t interval = qp.req.paths
                                 ? std::min(context_.config.ack_request_interval, qp.multipath.ack_every_packets)
                                 : context_.config.ack_request_interval;
    headers.bth.ack_req = ack_request || last_packet || qp.req.packets_since_ack_request >= interval;
    if (headers.bth.ack_req) qp.req.packets_since_ack_request = 0;
  }

  // Multipath: each packet on the next EV (its UDP source port).
  std::uint16_t port = qp.udp_source_port;
  if (qp.req.paths) {
    bool more_behind = !last_packet || &wqe != &qp.req.send_queue.back();
    port = qp.req.paths->send(psn, now, !wqe.is_read_or_atomic(), more_behind);
  }
  auto layout = qp.type == QpType::ud ? context_.begin_packet_to(wqe.ud_destination, wqe.ud_remote_qpn,
                                                                 qp.udp_source_port, headers, payload_length, out)
                                      : context_.begin_packet_to(qp.attr.ah_attr, qp.attr.dest_qp_num, port, headers,
                                                                 payload_length + placement_header, out,
                                                                 qp.req.paths ? transport::ev_flow_label(port) : 0);
  if (!layout) return 0;
  std::uint8_t* payload = &out[layout->payload_offset];
  if (placement_header == transport::kWritePlacementLength) {
    wire::RethRepr own{wqe.remote_addr + payload_offset, wqe.rkey, static_cast<std::uint32_t>(wqe.length - payload_offset)};
    own.emit(MutableByteSpan(payload, placement_header));
  } else if (placement_header == transport::kSendPlacementLength) {
    transport::emit_send_placement({wqe.receive_message, static_cast<std::uint32_t>(payload_offset)}, payload);
  }
  payload += placement_header;
  if (wqe.by_extent && wqe.opcode != WrOpcode::rdma_read) {  // a READ's bit asks; it names nothing
    transport::emit_extent_payload({*wqe.extent, wqe.length}, payload);
    ++context_.counters.extent_packets_sent;
  } else if (!context_.config.carry_payload) {
    // lengths only
  } else if (!wqe.inline_data.empty()) {
    std::memcpy(payload, wqe.inline_data.data() + payload_offset, payload_length);
  } else if (payload_length > 0) {
    transport::gather(wqe.segments, payload_offset, payload, payload_length);
  }

  if (qp.req.any_sent && psn_at_or_before(psn, qp.req.highest_sent_psn)) {
    ++context_.counters.retransmitted_packets;
  } else {
    // A READ request covers every PSN its responses will use.
    qp.req.highest_sent_psn = wqe.opcode == WrOpcode::rdma_read ? wqe.last_psn() : psn;
    qp.req.any_sent = true;
  }
  return context_.finish_packet(out, *layout);
}

WcStatus transport::Requester::execute_local_operation(QueuePair& qp, SendWqe& wqe) {
  wqe.started = true;
  wqe.first_psn = qp.req.next_psn;
  wqe.packet_count = 0;
  WcStatus status = WcStatus::success;
  if (wqe.opcode == WrOpcode::bind_mw) {
    status = context_.memory_regions.bind_window(qp.qpn, qp.pd, wqe.bind);
  } else if (!context_.memory_regions.invalidate_rkey(wqe.invalidate_rkey, qp.pd, qp.qpn)) {
    status = WcStatus::loc_qp_op_err;  // no such key of this QP's to invalidate
  }
  if (status == WcStatus::success) wqe.done = true;
  return status;
}

void transport::Requester::rewind_to(QueuePair& qp, std::uint32_t psn) {
  for (std::size_t i = 0; i < qp.req.send_queue.size(); ++i) {
    const SendWqe& wqe = qp.req.send_queue[i];
    if (!wqe.started) break;
    if (wqe.done || !psn_at_or_before(psn, wqe.last_psn())) continue;
    qp.req.send_cursor = i;
    qp.req.send_cursor_packet =
        psn_before(psn, wqe.first_psn) ? 0 : static_cast<std::uint32_t>(psn_diff(psn, wqe.first_psn));
    if (wqe.is_read_or_atomic() && wqe.opcode != WrOpcode::rdma_read) qp.req.send_cursor_packet = 0;
    context_.mark_ready(qp);
    return;
  }
}

void transport::Requester::rewind_once(QueuePair& qp, std::uint32_t psn) {
  if (qp.comp.implicit_rewind_done && qp.comp.implicit_rewind_psn == psn) return;
  qp.comp.implicit_rewind_done = true;
  qp.comp.implicit_rewind_psn = psn;
  if (qp.comp.sacks) {
    qp.comp.sacks->restart(psn, psn_add(psn, 1));
    context_.mark_ready(qp);
    return;
  }
  rewind_to(qp, psn);
}

}  // namespace uroce
