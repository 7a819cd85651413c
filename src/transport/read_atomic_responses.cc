// The completer's side of READ responses and atomic ACKs: placing each
// response in order into the READ's local buffers (asking again from the
// first missing one), and an atomic's original value into its buffer.
#include <algorithm>
#include <cstring>

#include "transport/completer.h"
#include "transport/psn.h"

namespace uroce {

using transport::psn_add;
using transport::psn_at_or_before;
using transport::psn_before;
using transport::QueuePair;
using transport::SendWqe;

namespace {

// The unfinished READ whose PSN range holds psn, and whether it is the oldest
// unfinished WQE (only then may its responses be placed).
std::pair<SendWqe*, bool> find_read(QueuePair& qp, std::uint32_t psn) {
  bool oldest = true;
  for (SendWqe& wqe : qp.req.send_queue) {
    if (!wqe.started) break;
    if (wqe.done) continue;
    if (wqe.opcode == WrOpcode::rdma_read && psn_at_or_before(wqe.first_psn, psn) &&
        psn_at_or_before(psn, wqe.last_psn())) {
      return {&wqe, oldest};
    }
    oldest = false;
  }
  return {nullptr, false};
}

}  // namespace

void transport::Completer::on_read_response(QueuePair& qp, const wire::RocePacket& packet, TimeNs now) {
  std::uint32_t psn = packet.headers.bth.psn;
  auto [read, oldest] = find_read(qp, psn);
  if (read == nullptr) return;  // a duplicate of a finished READ
  if (!oldest) {
    // The response implies the responder got everything before the READ:
    // that completes earlier SEND/WRITEs, or shows an earlier response lost.
    acknowledge_through(qp, psn_add(read->first_psn, -1), now);
    std::tie(read, oldest) = find_read(qp, psn);
    if (read == nullptr || !oldest) return;
  }
  std::uint32_t expected = psn_add(read->first_psn, static_cast<std::int64_t>(read->read_received / context_.mtu(qp)));
  if (psn != expected) {
    if (psn_before(expected, psn)) requester_.rewind_once(qp, expected);  // a response was lost: ask again
    return;
  }
  // After a re-request from the middle the responder starts a new stream, so
  // FIRST and MIDDLE are both fine here; what must hold is the length, and
  // that LAST/ONLY marks the end.
  // One response by reference (RegionBacking) carries all that remains.
  bool whole = packet.headers.bth.extent_payload;
  std::uint64_t remaining = read->length - read->read_received;
  std::uint64_t want = whole ? remaining : std::min<std::uint64_t>(context_.mtu(qp), remaining);
  bool ends = packet.op->position == wire::Position::last || packet.op->position == wire::Position::only;
  if (ends != (whole || remaining <= context_.mtu(qp)) || packet.payload.size() != want) {
    return context_.fail_request(qp, psn, WcStatus::bad_resp_err);
  }
  if (packet.headers.aeth && wire::aeth_ack_type(packet.headers.aeth->syndrome) != wire::AckType::ack) {
    return context_.fail_request(qp, psn, WcStatus::bad_resp_err);
  }
  if (!context_.still_registered(read->segments, qp.pd, read->registrations)) {
    return context_.fail_request(qp, psn, WcStatus::loc_prot_err);  // its buffer was deregistered meanwhile
  }
  if (context_.config.carry_payload) {
    transport::scatter_payload(context_.peer_payload, read->segments, read->read_received, packet.payload);
  }
  read->read_received += packet.payload.size();
  qp.comp.retries_left = qp.attr.retry_cnt;
  if (ends) {
    read->done = true;
    acknowledge_through(qp, whole ? read->last_psn() : psn, now);  // one response by reference covers every PSN
  } else {
    requester_.arm_retransmit_timer(qp, now);
  }
}

void transport::Completer::on_unreadable_read_response(QueuePair& qp, std::uint32_t psn) {
  // Asked again, the READ would be answered the same way: end it.
  auto [read, oldest] = find_read(qp, psn);
  if (read != nullptr && read->by_extent) context_.fail_request(qp, psn, WcStatus::rem_op_err);
}

void transport::Completer::on_atomic_ack(QueuePair& qp, const wire::RocePacket& packet, TimeNs now) {
  std::uint32_t psn = packet.headers.bth.psn;
  for (SendWqe& wqe : qp.req.send_queue) {
    if (!wqe.started) break;
    if (wqe.done || wqe.first_psn != psn) continue;
    if (wqe.opcode != WrOpcode::atomic_cmp_and_swp && wqe.opcode != WrOpcode::atomic_fetch_and_add) {
      return context_.fail_request(qp, psn, WcStatus::bad_resp_err);
    }
    acknowledge_through(qp, psn_add(psn, -1), now);
    if (!context_.still_registered(wqe.segments, qp.pd, wqe.registrations))
      return context_.fail_request(qp, psn, WcStatus::loc_prot_err);
    std::uint64_t original = packet.headers.atomic_ack_eth->original;
    std::uint8_t bytes[8];
    std::memcpy(bytes, &original, sizeof bytes);
    if (context_.config.carry_payload) transport::scatter(wqe.segments, 0, bytes, sizeof bytes);
    wqe.done = true;
    acknowledge_through(qp, psn, now);
    return;
  }
}

}  // namespace uroce
