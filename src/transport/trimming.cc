// Packet trimming: what a responder does with a request whose payload a
// switch cut off. The headers name the QP and PSN of a packet that will not
// arrive whole, so the responder asks for it again at once instead of
// noticing the gap at the next packet (or never, for a message's last one,
// leaving it to the requester's timer).
#include <algorithm>
#include <cstdint>

#include "transport/engine_core.h"
#include "transport/psn.h"
#include "transport/receive_checks.h"
#include "wire/frame.h"

namespace uroce {

using transport::psn_at_or_before;
using transport::psn_before;
using transport::psn_diff;

void Engine::on_trimmed(std::span<const std::uint8_t> bytes, TimeNs /*now*/) {
  EngineCore& s = *core_;
  auto datagram = wire::parse_roce_datagram(bytes, wire::IcrcCheck::skip);
  if (!datagram) {
    ++s.counters.malformed_packets;
    return;
  }
  const wire::RocePacket& packet = datagram->packet;
  s.arrival_port = datagram->udp.src_port;
  wire::OpKind kind = packet.op->kind;
  bool request = kind == wire::OpKind::send || kind == wire::OpKind::rdma_write ||
                 kind == wire::OpKind::rdma_read_request || kind == wire::OpKind::compare_swap ||
                 kind == wire::OpKind::fetch_add;
  if (packet.op->transport != wire::Transport::rc || !request) return;  // a trimmed response is lost, as dropped
  transport::QueuePair* qp = s.find_qp(packet.headers.bth.dest_qp);
  if (qp == nullptr || qp->type != QpType::rc) return;
  if (transport::drop_if_rejected(s.counters, transport::check_sender(*qp, *datagram))) return;
  s.responder.on_trimmed(*qp, packet.headers.bth.psn);
  s.schedule_timer(*qp);
}

// Selective repeat: a NAK naming the trimmed PSN (NakCode::trimmed, uroce's
// extension), after which the requester resends that packet alone, even if
// it was a resend already. Go-back-N: a PSN sequence error at the expected
// PSN, once per gap as for a gap seen later; but a trimmed packet at the
// expected PSN is the resend that NAK asked for, cut again, and is NAKed again.
void transport::Responder::on_trimmed(transport::QueuePair& qp, std::uint32_t psn) {
  if (!qp.responder_active()) {
    return;
  }
  std::int32_t distance = psn_diff(psn, qp.resp.expected_psn);
  if (distance < 0) return;  // a duplicate's trim: the original arrived whole
  ++context_.counters.trimmed_received;
  if (qp.resp.reorder) {
    queue_nak(qp, psn, wire::AckType::nak, static_cast<std::uint8_t>(wire::NakCode::trimmed));
    return;
  }
  if (distance > 0 && qp.resp.sequence_nak_sent) return;
  qp.resp.sequence_nak_sent = true;
  queue_nak(qp, qp.resp.expected_psn, wire::AckType::nak, static_cast<std::uint8_t>(wire::NakCode::psn_sequence_error));
}

// The requester's side: remember the PSN (once) for resend_trimmed. A
// go-back-N requester never asked for this and ignores it.
void transport::Completer::on_trimmed_nak(transport::QueuePair& qp, std::uint32_t psn) {
  if (!qp.comp.sacks || psn_at_or_before(psn, qp.comp.acked_psn) || !qp.req.any_sent ||
      psn_before(qp.req.highest_sent_psn, psn))
    return;
  if (std::find(qp.req.trimmed_resends.begin(), qp.req.trimmed_resends.end(), psn) != qp.req.trimmed_resends.end())
    return;
  if (qp.req.trimmed_resends.size() >= context_.config.max_inflight_packets) return;  // bounded, whatever a peer sends
  qp.req.trimmed_resends.push_back(psn);
  context_.mark_ready(qp);
}

// Resends the oldest reported trimmed PSN that still needs it: its WQE is
// found by PSN, as resend_selected finds one. READs and atomics are left to
// the selective NAKs and timers (a trimmed READ request is rare: it is small).
std::size_t transport::Requester::resend_trimmed(transport::QueuePair& qp, MutableByteSpan out, TimeNs now) {
  while (!qp.req.trimmed_resends.empty()) {
    std::uint32_t psn = qp.req.trimmed_resends.front();
    qp.req.trimmed_resends.erase(qp.req.trimmed_resends.begin());
    if (psn_at_or_before(psn, qp.comp.acked_psn)) continue;
    for (transport::SendWqe& wqe : qp.req.send_queue) {
      if (!wqe.started || wqe.done || wqe.is_read_or_atomic() || psn_before(psn, wqe.first_psn) ||
          psn_before(wqe.last_psn(), psn)) {
        continue;
      }
      std::size_t length =
          send_request_packet(qp, wqe, static_cast<std::uint32_t>(psn_diff(psn, wqe.first_psn)), out, now);
      if (length > 0) return length;  // counted as a retransmission where it was built
    }
  }
  return 0;
}

}  // namespace uroce
