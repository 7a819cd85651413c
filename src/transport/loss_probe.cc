// Loss probes (QpInitAttr::loss_probe_ns), after TCP's tail loss probe: a
// requester that has heard nothing for a while sends its newest packet again
// with AckReq set, so that a lost tail costs a probe interval and a round
// trip instead of the Local ACK Timeout. What the responder does with the
// probe tells the requester what happened, through paths that exist anyway:
// - every packet before it arrived (only ACKs were late or lost): the probe
//   is a duplicate, and the responder acknowledges all it has;
// - some were lost: the probe is out of sequence, and the responder's
//   sequence NAK (go-back-N) or selective NAK (selective repeat) makes the
//   requester resend from the gap at once.
// A probe that gets no answer is followed by one of the oldest packet not
// acknowledged, and the two alternate: when the responder's one sequence NAK
// for a gap was lost, it answers no later packet (it NAKs a gap once), but
// it takes the packet it waits for, acknowledges it, and NAKs the next gap.
// Probes use no retry count and back off; the Local ACK Timeout, when it
// comes, is the same as without them.
#include <algorithm>

#include "transport/requester.h"

namespace uroce {

using transport::QueuePair;
using transport::SendWqe;
using transport::psn_before;
using transport::psn_diff;

void transport::Requester::on_probe_timer(QueuePair& qp, TimeNs now) {
  qp.req.probe_deadline = kNever;
  bool sending = qp.requester_active();
  if (!sending || qp.comp.rnr_resume_at != kNever || !qp.req.any_sent || unacked_psn(qp) == qp.req.next_psn) return;
  qp.req.probe_pending = true;
  ++qp.req.probes_unanswered;
  context_.mark_ready(qp);
  qp.req.probe_interval *= 2;
  if (qp.comp.retransmit_deadline != kNever && now + qp.req.probe_interval < qp.comp.retransmit_deadline) {
    qp.req.probe_deadline = now + qp.req.probe_interval;
  }
}

// The packet of the highest PSN sent (odd probes) or of the oldest PSN not
// acknowledged (even ones). A READ is asked again from its first missing
// response (a duplicate READ would make the responder send it all again).
std::size_t transport::Requester::send_loss_probe(QueuePair& qp, MutableByteSpan out, TimeNs now) {
  qp.req.probe_pending = false;
  bool newest = qp.req.probes_unanswered % 2 == 1;
  std::uint32_t target = newest ? qp.req.highest_sent_psn : unacked_psn(qp);
  for (std::size_t i = qp.req.send_queue.size(); i-- > 0;) {
    SendWqe& wqe = qp.req.send_queue[i];
    if (!wqe.started || wqe.done || wqe.packet_count == 0) continue;
    if (!newest && psn_before(target, wqe.first_psn)) continue;  // the oldest is in an earlier WQE
    std::uint32_t index;
    if (wqe.opcode == WrOpcode::rdma_read) {
      index = static_cast<std::uint32_t>(wqe.read_received / context_.mtu(qp));
    } else if (wqe.is_read_or_atomic()) {
      index = 0;
    } else {
      if (psn_before(target, wqe.first_psn)) continue;  // none of its packets sent yet
      std::int32_t offset = psn_diff(target, wqe.first_psn);
      index = std::min<std::uint32_t>(static_cast<std::uint32_t>(offset), wqe.packet_count - 1);
    }
    // AckReq on the probe: the responder answers it at once.
    std::size_t length = send_request_packet(qp, wqe, index, out, now, /*ack_request=*/true);
    if (length > 0) {
      ++context_.counters.loss_probes;
      context_.account_data_packet(qp, length, now);
    }
    return length;
  }
  return 0;
}

}  // namespace uroce
