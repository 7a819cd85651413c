// The completer: completes WQEs in order as ACKs arrive, and recovers by
// go-back-N (or selective repeat) on NAKs and timeouts: the Local ACK
// Timeout, 4.096 us << timeout, and retry_cnt tries, as the IBTA
// specification sets them. READ responses and atomic ACKs:
// read_atomic_responses.cc.
#include "transport/completer.h"

#include "transport/psn.h"

namespace uroce {

using transport::psn_add;
using transport::psn_at_or_before;
using transport::psn_before;
using transport::QueuePair;
using transport::SendWqe;

// Everything up to and including psn was received by the responder. SEND and
// WRITE WQEs in that range are done; a READ or atomic there whose response is
// missing means the response was lost: go back to it.
void transport::Completer::acknowledge_through(QueuePair& qp, std::uint32_t psn, TimeNs now) {
  bool progress = false;
  if (psn_before(qp.comp.acked_psn, psn)) {
    if (qp.req.paths) paths_delivered(qp, psn_add(qp.comp.acked_psn, 1), psn, now);
    if (qp.comp.sacks) qp.comp.sacks->forget_before(psn_add(qp.comp.acked_psn, 1), psn_add(psn, 1));
    qp.comp.acked_psn = psn;
    progress = true;
  }
  // Acknowledgements are cumulative: an earlier ACK may have covered SEND and
  // WRITE WQEs that waited behind a READ finished only now.
  psn = qp.comp.acked_psn;
  for (std::size_t i = 0; i < qp.req.send_queue.size(); ++i) {
    SendWqe& wqe = qp.req.send_queue[i];
    if (!wqe.started || !psn_at_or_before(wqe.first_psn, psn)) break;
    if (wqe.done) continue;
    if (wqe.is_read_or_atomic()) {
      if (psn_at_or_before(wqe.last_psn(), psn)) requester_.rewind_once(qp, requester_.unacked_psn(qp));
      break;
    }
    if (!psn_at_or_before(wqe.last_psn(), psn)) break;
    wqe.done = true;
    progress = true;
  }
  context_.retire_completed(qp);
  if (qp.comp.sacks) qp.comp.sacks->catch_up(requester_.unacked_psn(qp));
  if (qp.req.paths) find_lost_paths(qp, now);
  // Progress restores both budgets: they bound the tries of one message, not
  // of the QP's life (as Soft-RoCE's completer resets them). An RNR NAK
  // acknowledges what came before its PSN first, then spends one.
  if (progress) {
    qp.comp.retries_left = qp.attr.retry_cnt;
    qp.comp.rnr_retries_left = qp.attr.rnr_retry;
  }
  bool outstanding = requester_.unacked_psn(qp) != qp.req.next_psn;
  if (outstanding) {
    requester_.arm_retransmit_timer(qp, now);
  } else {
    qp.comp.retransmit_deadline = kNever;
    qp.req.probe_deadline = kNever;
  }
  context_.mark_ready(qp);
}

// Selective repeat: the responder expects `expected` and holds `held` (or,
// when held is not a PSN after expected that we sent, nothing new).
void transport::Completer::on_selective_nak(QueuePair& qp, std::uint32_t expected, std::uint32_t held, TimeNs now) {
  bool reported = psn_before(expected, held) && psn_before(held, qp.req.next_psn);
  // Marked first, so the timer acknowledge_through arms counts the held PSN
  // out of those in flight (the tail timeout may then apply).
  if (reported) qp.comp.sacks->mark(held);
  if (reported && qp.req.paths) paths_delivered(qp, held, held, now);
  acknowledge_through(qp, psn_add(expected, -1), now);
  // Multipath: a gap is reordering between paths until the reorder window
  // says otherwise (acknowledge_through looked); resend nothing on it alone.
  if (!qp.req.paths) qp.comp.sacks->recover(expected, reported ? held : psn_add(expected, 1));
  context_.mark_ready(qp);
}

void transport::Completer::on_response(QueuePair& qp, const wire::RocePacket& packet, TimeNs now) {
  if (!qp.completer_active()) return;
  // A response for a PSN never sent is stale or forged: ignore it.
  if (!psn_before(packet.headers.bth.psn, qp.req.next_psn)) return;
  switch (packet.op->kind) {
    case wire::OpKind::rdma_read_response:
      on_read_response(qp, packet, now);
      break;
    case wire::OpKind::atomic_acknowledge:
      on_atomic_ack(qp, packet, now);
      break;
    case wire::OpKind::acknowledge:
      on_ack_or_nak(qp, packet, now);
      break;
    default:
      break;
  }
}

void transport::Completer::on_ack_or_nak(QueuePair& qp, const wire::RocePacket& packet, TimeNs now) {
  std::uint32_t psn = packet.headers.bth.psn;
  std::uint8_t syndrome = packet.headers.aeth->syndrome;
  std::uint32_t previous = psn_add(psn, -1);
  // A NAK for a PSN that was acknowledged since is stale (reordered or duplicated).
  bool stale = psn_at_or_before(psn, qp.comp.acked_psn);
  if (stale && wire::aeth_ack_type(syndrome) != wire::AckType::ack) return;
  switch (wire::aeth_ack_type(syndrome)) {
    case wire::AckType::ack:
      acknowledge_through(qp, psn, now);
      return;
    case wire::AckType::rnr_nak:
      acknowledge_through(qp, previous, now);
      if (qp.attr.rnr_retry != 7) {
        if (qp.comp.rnr_retries_left == 0) return context_.fail_request(qp, psn, WcStatus::rnr_retry_exc_err);
        --qp.comp.rnr_retries_left;
      }
      requester_.rewind_to(qp, psn);  // both modes: the responder kept nothing from psn on
      if (qp.comp.sacks) qp.comp.sacks->advance_to(qp.comp.sacks->recovery_end());
      qp.comp.rnr_resume_at = now + transport::rnr_timer_ns(wire::aeth_value(syndrome));
      qp.comp.retransmit_deadline = kNever;
      return;
    case wire::AckType::nak:
      break;
    case wire::AckType::reserved:
      return;
  }
  switch (static_cast<wire::NakCode>(wire::aeth_value(syndrome))) {
    case wire::NakCode::psn_sequence_error:
      if (qp.comp.sacks) return on_selective_nak(qp, psn, packet.headers.aeth->msn, now);
      acknowledge_through(qp, previous, now);
      // The responder NAKs a gap once; a second NAK for the same PSN is a
      // duplicate of the first and must not restart the retransmission.
      if (qp.comp.implicit_rewind_done && qp.comp.implicit_rewind_psn == psn) return;
      if (qp.comp.retries_left == 0) return context_.fail_request(qp, psn, WcStatus::retry_exc_err);
      --qp.comp.retries_left;
      requester_.rewind_once(qp, psn);
      return;
    case wire::NakCode::trimmed:
      if (qp.req.paths) qp.req.paths->congested(context_.arrival_port, now);  // the NAK echoes the trimmed packet's EV
      return on_trimmed_nak(qp, psn);
    case wire::NakCode::invalid_request:
      acknowledge_through(qp, previous, now);
      return context_.fail_request(qp, psn, WcStatus::rem_inv_req_err);
    case wire::NakCode::remote_access_error:
      acknowledge_through(qp, previous, now);
      return context_.fail_request(qp, psn, WcStatus::rem_access_err);
    case wire::NakCode::remote_operational_error:
      acknowledge_through(qp, previous, now);
      return context_.fail_request(qp, psn, WcStatus::rem_op_err);
    default:
      acknowledge_through(qp, previous, now);
      return context_.fail_request(qp, psn, WcStatus::bad_resp_err);
  }
}

void transport::Completer::on_timer(QueuePair& qp, TimeNs now) {
  if (qp.req.paths && qp.req.paths->loss_check_at() <= now) find_lost_paths(qp, now);
  if (qp.comp.rnr_resume_at != kNever && qp.comp.rnr_resume_at <= now) {
    qp.comp.rnr_resume_at = kNever;
    qp.comp.retransmit_deadline = kNever;
    context_.mark_ready(qp);
  }
  if (qp.comp.retransmit_deadline == kNever || qp.comp.retransmit_deadline > now) return;
  std::uint32_t oldest = requester_.unacked_psn(qp);
  if (oldest == qp.req.next_psn) {
    qp.comp.retransmit_deadline = kNever;
    return;
  }
  ++context_.counters.timeouts;
  qp.comp.implicit_rewind_done = false;
  if (qp.comp.retries_left == 0) return context_.fail_request(qp, oldest, WcStatus::retry_exc_err);
  --qp.comp.retries_left;
  if (qp.req.paths) qp.req.paths->timed_out(oldest, now);
  if (qp.comp.sacks) {
    // Resend everything not reported held, and the oldest PSN even if it was:
    // when only ACKs were lost, that duplicate is what makes the responder
    // acknowledge again.
    qp.comp.sacks->unmark(oldest);
    qp.comp.sacks->restart(oldest, psn_add(qp.req.highest_sent_psn, 1));
    context_.mark_ready(qp);
  } else {
    requester_.rewind_to(qp, oldest);
  }
  requester_.arm_retransmit_timer(qp, now);
}

}  // namespace uroce
