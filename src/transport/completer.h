// The completer (rxe's comp): takes the responder's ACKs, NAKs, READ
// responses and atomic ACKs, completes the WQEs they finish, and on a NAK,
// a gap or a timeout rewinds the requester, within the retry budgets.
#pragma once

#include <vector>

#include "transport/requester.h"
#include "transport/role_context.h"

namespace uroce::transport {

class Completer {
 public:
  Completer(RoleContext& context, Requester& requester) : context_(context), requester_(requester) {}

  // An ACK, NAK, READ response or atomic ACK for this QP.
  void on_response(QueuePair& qp, const wire::RocePacket& packet, TimeNs now);
  // The retransmit, RNR or multipath loss-check deadline passed.
  void on_timer(QueuePair& qp, TimeNs now);
  // A READ response by reference whose bytes could not be read: its READ,
  // if one asked for that, ends with REM_OP_ERR (read_atomic_responses.cc).
  void on_unreadable_read_response(QueuePair& qp, std::uint32_t psn);

 private:
  void on_ack_or_nak(QueuePair& qp, const wire::RocePacket& packet, TimeNs now);
  void on_read_response(QueuePair& qp, const wire::RocePacket& packet, TimeNs now);
  void on_atomic_ack(QueuePair& qp, const wire::RocePacket& packet, TimeNs now);
  void acknowledge_through(QueuePair& qp, std::uint32_t psn, TimeNs now);
  void on_selective_nak(QueuePair& qp, std::uint32_t expected, std::uint32_t held, TimeNs now);
  void on_trimmed_nak(QueuePair& qp, std::uint32_t psn);
  // Multipath (multipath_acknowledgements.cc): the responder has these PSNs; which are lost.
  void paths_delivered(QueuePair& qp, std::uint32_t from, std::uint32_t through, TimeNs now);
  void find_lost_paths(QueuePair& qp, TimeNs now);

  RoleContext& context_;
  Requester& requester_;
  std::vector<std::uint32_t> lost_scratch_;  // find_lost_paths' list, reused
};

}  // namespace uroce::transport
