// Selective repeat's out-of-order arrivals at the responder: a packet that
// arrives after a gap is held and reported, and runs in order once the gap
// fills. With multipath direct placement (direct_placement.h) a WRITE or
// SEND packet the requester marked place_early is written to memory (or to
// its receive WQE) on arrival and only its headers are held; the
// requester's half, which WQEs it may mark, is here too.
#include <algorithm>

#include "transport/psn.h"
#include "transport/registered_copy.h"
#include "transport/requester.h"
#include "transport/responder.h"

namespace uroce {

using transport::psn_add;
using transport::QueuePair;

namespace {

bool is_write(WrOpcode opcode) { return opcode == WrOpcode::rdma_write || opcode == WrOpcode::rdma_write_with_imm; }

// The remote bytes a WQE reads or writes under its rkey, [begin, end).
struct RemoteRange {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  bool overlaps(const RemoteRange& other) const { return begin < other.end && other.begin < end; }
};

std::optional<RemoteRange> remote_range(const transport::SendWqe& wqe) {
  switch (wqe.opcode) {
    case WrOpcode::rdma_write:
    case WrOpcode::rdma_write_with_imm:
    case WrOpcode::rdma_read: return RemoteRange{wqe.remote_addr, wqe.remote_addr + wqe.length};
    case WrOpcode::atomic_cmp_and_swp:
    case WrOpcode::atomic_fetch_and_add:
    case WrOpcode::atomic_write: return RemoteRange{wqe.remote_addr, wqe.remote_addr + 8};
    default: return std::nullopt;  // SENDs land in receive buffers, not under an rkey
  }
}

}  // namespace

// Out of order, a packet's payload may land before the requests ahead of it
// run only when no earlier request could change its outcome: none writes or
// reads the same bytes under the same rkey, and none invalidates that rkey
// (a SEND with invalidate ahead of it must make it fail, as in PSN order).
// The requester vouches for that with place_early. Two rkeys of one memory
// are beyond what it can see; verbs leave such aliasing to the application.
bool transport::Requester::may_place_early(const QueuePair& qp, const transport::SendWqe& wqe) const {
  if (!qp.req.paths || !transport::places_directly(qp.multipath)) return false;
  if (!is_write(wqe.opcode)) return wqe.takes_receive();  // a SEND: its own receive WQE, nothing earlier writes there
  RemoteRange range = *remote_range(wqe);
  for (const transport::SendWqe& earlier : qp.req.send_queue) {
    if (&earlier == &wqe) break;
    if (earlier.done) continue;
    if (earlier.opcode == WrOpcode::send_with_inv && earlier.invalidate_rkey == wqe.rkey) return false;
    if (earlier.rkey != wqe.rkey) continue;
    std::optional<RemoteRange> touched = remote_range(earlier);
    if (touched && touched->overlaps(range)) return false;
  }
  return true;
}

// Where an out-of-order WRITE packet's payload may go at once: its own RETH
// says where, and every check the in-order path would make of that packet
// alone must pass; nullptr when it must wait for its turn. So must a WRITE
// with immediate's last packet: its receive WQE may be missing (RNR), and a
// request refused for RNR must find memory as it was.
std::uint8_t* transport::Responder::early_target(const QueuePair& qp, const wire::RocePacket& packet) {
  if (!packet.headers.bth.place_early || !transport::places_directly(qp.multipath) ||
      packet.op->kind != wire::OpKind::rdma_write || packet.headers.imm_dt || !packet.headers.reth) {
    return nullptr;
  }
  const wire::RethRepr& reth = *packet.headers.reth;
  std::size_t length = packet.payload.size();
  bool ends = packet.op->position == wire::Position::last || packet.op->position == wire::Position::only;
  if (length == 0 || !payload_length_ok(qp, packet) || (ends ? reth.dma_length != length : reth.dma_length <= length) ||
      (qp.attr.qp_access_flags & kAccessRemoteWrite) == 0) {
    return nullptr;
  }
  auto target = context_.memory_regions.resolve_remote(reth.rkey, qp.pd, reth.va, length, kAccessRemoteWrite, qp.qpn);
  return target ? *target : nullptr;
}

// The receive WQE an out-of-order SEND packet's placement header names, if
// it is posted already and the packet fits in it at its offset; nullptr
// when it must wait for its turn. Receives from an SRQ are taken only in
// turn: which one a message gets is not known before.
transport::RecvWqe* transport::Responder::early_receive(QueuePair& qp, const wire::RocePacket& packet,
                                                        const transport::SendPlacement& send) const {
  if (!packet.headers.bth.place_early || !transport::places_directly(qp.multipath) || qp.srq != 0 ||
      packet.op->kind != wire::OpKind::send || packet.payload.empty() || !payload_length_ok(qp, packet)) {
    return nullptr;
  }
  std::int64_t ahead = static_cast<std::int32_t>(send.message - qp.resp.receives_taken);
  transport::RecvWqe* wqe = nullptr;
  if (ahead == -1 && qp.resp.current_recv && qp.resp.receiving_send) {
    wqe = &*qp.resp.current_recv;  // the message being received now
  } else if (ahead >= 0 && ahead < static_cast<std::int64_t>(qp.resp.recv_queue.size())) {
    wqe = &qp.resp.recv_queue[static_cast<std::size_t>(ahead)];
  }
  if (wqe != nullptr) recheck_receive(*wqe);
  if (wqe == nullptr || wqe->local_error != WcStatus::success ||
      std::uint64_t{send.offset} + packet.payload.size() > wqe->capacity) {
    return nullptr;
  }
  return wqe;
}

// Selective repeat: keep a packet that arrived after a gap and report it, so
// the requester resends only what is missing. Without payloads (the
// simulator) only the headers are worth keeping; after direct placement,
// only the headers and the placement header.
void transport::Responder::hold_out_of_order(QueuePair& qp, const wire::RocePacket& packet, ByteSpan bytes,
                                             const std::optional<transport::SendPlacement>& send) {
  std::uint32_t psn = packet.headers.bth.psn;
  std::uint8_t* target = send ? nullptr : early_target(qp, packet);
  transport::RecvWqe* receive = send ? early_receive(qp, packet, *send) : nullptr;
  bool place = target != nullptr || receive != nullptr;
  std::size_t headers_end = static_cast<std::size_t>(packet.payload.data() - bytes.data());
  std::size_t keep = !context_.config.carry_payload ? kHeldHeaderBytes : place ? headers_end : bytes.size();
  if (qp.resp.reorder->hold(psn, qp.resp.expected_psn, bytes, keep)) {  // not for a duplicate
    ++context_.counters.held_out_of_order;
    if (place && context_.config.carry_payload) {
      if (target != nullptr) {
        transport::copy_registered(target, packet.payload.data(), packet.payload.size());
      } else {
        transport::scatter(receive->segments, send->offset, packet.payload.data(), packet.payload.size());
      }
    }
    if (place) ++context_.counters.placed_out_of_order;
  }
  bool held = qp.resp.reorder->find(psn).has_value();  // beyond the window: report nothing new
  queue_nak(qp, qp.resp.expected_psn, wire::AckType::nak, static_cast<std::uint8_t>(wire::NakCode::psn_sequence_error),
            held ? psn : qp.resp.expected_psn);
}

// Selective repeat: after the request at `from` executed, run the held
// packets that now follow in order, and acknowledge the filled gap at once.
void transport::Responder::deliver_held(QueuePair& qp, std::uint32_t from) {
  qp.resp.reorder->release(from, qp.resp.expected_psn);
  bool filled = false;
  while (qp.resp.reorder->held() > 0 && qp.state != QpState::err) {
    std::uint32_t psn = qp.resp.expected_psn;
    std::optional<ByteSpan> bytes = qp.resp.reorder->find(psn);
    if (!bytes) break;
    std::uint32_t length = qp.resp.reorder->held_length(psn);
    // Headers only: the payload was placed on arrival (a packet that was not
    // is kept whole), or never carried (the simulator, which copies nothing).
    bool placed = bytes->size() < length;
    if (placed) {  // what follows the headers in the scratch is never read
      if (replay_scratch_.size() < length) replay_scratch_.resize(length);
      std::copy(bytes->begin(), bytes->end(), replay_scratch_.begin());
      bytes = ByteSpan(replay_scratch_).first(length);
    }
    auto packet = wire::parse_roce_packet(*bytes);  // it parsed on arrival; this cannot fail
    if (!packet) break;
    std::optional<transport::SendPlacement> send;
    transport::take_placement_header(qp.multipath, *packet, send);  // it did on arrival
    execute_request(qp, *packet, placed, send);
    if (qp.resp.expected_psn == psn) break;  // RNR: the requester resends it after the timer
    if (qp.state == QpState::err) break;
    qp.resp.reorder->release(psn, qp.resp.expected_psn);
    filled = true;
  }
  if (filled && qp.state != QpState::err) queue_ack(qp, psn_add(qp.resp.expected_psn, -1));
}

}  // namespace uroce
