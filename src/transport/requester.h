// The requester (rxe's req): turns the send queue into request packets,
// in order, within the window, the read/atomic limit and the pace; resends
// from where the completer rewinds it; sends loss probes.
#pragma once

#include "transport/role_context.h"

namespace uroce::transport {

class Requester {
 public:
  explicit Requester(RoleContext& context) : context_(context) {}

  // The next request packet of this QP into out; 0 when it has none to send now.
  std::size_t transmit(QueuePair& qp, MutableByteSpan out, TimeNs now);
  // The loss probe timer fired (loss_probe.cc): the next transmit sends one.
  void on_probe_timer(QueuePair& qp, TimeNs now);

  // The oldest PSN the responder has not acknowledged (next_psn when none).
  std::uint32_t unacked_psn(const QueuePair& qp) const;
  // Sets when the completer stops waiting for an ACK, waiting from now.
  void arm_retransmit_timer(QueuePair& qp, TimeNs now) const;
  // Moves the send cursor back to psn's WQE and packet.
  void rewind_to(QueuePair& qp, std::uint32_t psn);
  // Rewinds to psn once per missing PSN (implicit evidence of a lost response).
  void rewind_once(QueuePair& qp, std::uint32_t psn);

 private:
  bool window_full(const QueuePair& qp, std::uint32_t psn) const;
  // Whether a SEND or WRITE of `length` bytes by reference would put more
  // than max_inflight_packets MTUs in flight.
  bool extent_window_full(const QueuePair& qp, std::uint64_t length) const;
  // A bind or local invalidate at the head of what the requester sends: done
  // at once; its status (mw_bind_err, loc_qp_op_err) when refused.
  WcStatus execute_local_operation(QueuePair& qp, SendWqe& wqe);
  // Whether a WRITE about to start may be placed ahead of a gap (out_of_order.cc).
  bool may_place_early(const QueuePair& qp, const SendWqe& wqe) const;
  // Builds the index-th packet of a WQE (a READ: the request from that response on).
  // ack_request: set AckReq whatever the interval says (a loss probe).
  std::size_t send_request_packet(QueuePair& qp, SendWqe& wqe, std::uint32_t index, MutableByteSpan out, TimeNs now,
                                  bool ack_request = false);
  std::size_t send_loss_probe(QueuePair& qp, MutableByteSpan out, TimeNs now);
  // Selective repeat: the next PSN to resend.
  std::size_t resend_selected(QueuePair& qp, MutableByteSpan out, TimeNs now);
  std::size_t resend_trimmed(QueuePair& qp, MutableByteSpan out, TimeNs now);

  RoleContext& context_;
};

}  // namespace uroce::transport
