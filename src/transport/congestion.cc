// The engine's congestion control: pacing each QP's data packets by its
// DCQCN rate, and the notification point's CNPs for CE-marked data.
#include <algorithm>

#include "transport/receive_checks.h"
#include "transport/role_context.h"

namespace uroce {

using transport::QueuePair;

bool transport::RoleContext::paced_out(QueuePair& qp, TimeNs now) {
  if (!qp.cc.dcqcn || now >= qp.cc.next_send_time) return false;
  qp.cc.pacing_blocked = true;  // on_timer wakes it at next_send_time
  return true;
}

void transport::RoleContext::account_data_packet(QueuePair& qp, std::size_t length, TimeNs now) {
  if (!qp.cc.dcqcn) return;
  qp.cc.dcqcn->on_bytes_sent(length);
  qp.cc.paced_slot_start = std::max(now, qp.cc.next_send_time);
  qp.cc.paced_length = static_cast<std::uint32_t>(length);
  repace(qp);
}

// The next data packet may leave once the last one's length has passed at
// the rate now in force, so a rate that rises (or falls) while the QP waits
// moves the wait, as a NIC's rate limiter does.
void transport::RoleContext::repace(QueuePair& qp) {
  auto gap = static_cast<TimeNs>(static_cast<double>(qp.cc.paced_length) * 8e9 / qp.cc.dcqcn->rate_bps());
  qp.cc.next_send_time = qp.cc.paced_slot_start + gap;
}

void transport::RoleContext::on_congestion_experienced(QueuePair& qp, const wire::RoceDatagram& datagram, TimeNs now) {
  ++counters.ecn_marked_received;
  if (!config.congestion.notification_point) return;
  if (!qp.responder_active()) return;
  transport::ResponderOutput cnp;
  cnp.kind = transport::ResponderOutput::Kind::cnp;
  if (qp.type == QpType::ud) {
    // A UD QP hears from many senders: the CNP goes back to this datagram's
    // source QP, rate-limited per source rather than per QP.
    cnp.destination.dgid = transport::source_gid(datagram);
    cnp.dest_qp = datagram.packet.headers.deth->src_qp;
    if (qp.cc.ud_cnp_allowed_at.size() >= 4096) qp.cc.ud_cnp_allowed_at.clear();  // bounded, whatever arrives
    TimeNs& allowed_at = qp.cc.ud_cnp_allowed_at[{cnp.destination.dgid, cnp.dest_qp}];
    if (now < allowed_at) return;
    allowed_at = now + config.congestion.min_time_between_cnps_ns;
  } else {
    if (now < qp.cc.cnp_allowed_at) return;
    qp.cc.cnp_allowed_at = now + config.congestion.min_time_between_cnps_ns;
    cnp.destination = qp.attr.ah_attr;
    cnp.dest_qp = qp.attr.dest_qp_num;
    if (qp.multipath.entropy_values != 0) cnp.source_port = datagram.udp.src_port;  // the marked packet's EV
  }
  qp.resp.outputs.push_front(cnp);  // ahead of ACKs and READ data: it is urgent
  mark_ready(qp);
}

}  // namespace uroce
