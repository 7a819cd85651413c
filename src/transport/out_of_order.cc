// Selective repeat's out-of-order arrivals at the responder: a packet that
// arrives after a gap is held and reported, and runs in order once the gap
// fills. With multipath direct placement (direct_placement.h) a WRITE packet
// the requester marked place_early is written to memory on arrival and only
// its headers are held; the requester's half, which WRITEs it may mark, is
// here too.
#include <algorithm>
#include <cstring>

#include "transport/direct_placement.h"
#include "transport/engine_state.h"
#include "transport/psn.h"

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
    case WrOpcode::atomic_fetch_and_add: return RemoteRange{wqe.remote_addr, wqe.remote_addr + 8};
    default: return std::nullopt;  // SENDs land in receive buffers, not under an rkey
  }
}

}  // namespace

// Out of order, a packet's payload may land before the requests ahead of it
// run only when nothing earlier can write the same bytes later: the
// requester vouches for that with place_early. Two rkeys of one memory are
// beyond what it can see; verbs leave such aliasing to the application.
bool EngineState::may_place_early(const QueuePair& qp, const transport::SendWqe& wqe) const {
  if (!qp.paths || !transport::places_directly(qp.multipath) || !is_write(wqe.opcode)) return false;
  RemoteRange range = *remote_range(wqe);
  for (const transport::SendWqe& earlier : qp.send_queue) {
    if (&earlier == &wqe) break;
    if (earlier.done || earlier.rkey != wqe.rkey) continue;
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
std::uint8_t* EngineState::early_target(const QueuePair& qp, const wire::RocePacket& packet) {
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
  auto target = memory_regions.resolve_remote(reth.rkey, qp.pd, reth.va, length, kAccessRemoteWrite);
  return target ? *target : nullptr;
}

// Selective repeat: keep a packet that arrived after a gap and report it, so
// the requester resends only what is missing. Without payloads (the
// simulator) only the headers are worth keeping; after direct placement,
// only the headers and the placement header.
void EngineState::hold_out_of_order(QueuePair& qp, const wire::RocePacket& packet, ByteSpan bytes) {
  std::uint32_t psn = packet.headers.bth.psn;
  std::uint8_t* target = early_target(qp, packet);
  std::size_t headers_end = static_cast<std::size_t>(packet.payload.data() - bytes.data());
  std::size_t keep = !config.carry_payload ? kHeldHeaderBytes : target != nullptr ? headers_end : bytes.size();
  if (qp.reorder->hold(psn, qp.expected_psn, bytes, keep, target != nullptr)) {  // not for a duplicate
    ++counters.held_out_of_order;
    if (target != nullptr) {
      if (config.carry_payload) std::memcpy(target, packet.payload.data(), packet.payload.size());
      ++counters.placed_out_of_order;
    }
  }
  bool held = qp.reorder->find(psn).has_value();  // beyond the window: report nothing new
  queue_nak(qp, qp.expected_psn, wire::AckType::nak, static_cast<std::uint8_t>(wire::NakCode::psn_sequence_error),
            held ? psn : qp.expected_psn);
}

// Selective repeat: after the request at `from` executed, run the held
// packets that now follow in order, and acknowledge the filled gap at once.
void EngineState::deliver_held(QueuePair& qp, std::uint32_t from) {
  qp.reorder->release(from, qp.expected_psn);
  bool filled = false;
  while (qp.reorder->held() > 0 && qp.state != QpState::err) {
    std::uint32_t psn = qp.expected_psn;
    std::optional<ByteSpan> bytes = qp.reorder->find(psn);
    if (!bytes) break;
    std::uint32_t length = qp.reorder->held_length(psn);
    if (bytes->size() < length) {
      // Headers only: the payload was placed on arrival, or never carried
      // (the simulator). What follows them in the scratch is never read.
      if (replay_scratch.size() < length) replay_scratch.resize(length);
      std::copy(bytes->begin(), bytes->end(), replay_scratch.begin());
      bytes = ByteSpan(replay_scratch).first(length);
    }
    auto packet = wire::parse_roce_packet(*bytes);  // it parsed on arrival; this cannot fail
    if (!packet) break;
    if (transport::carries_placement_header(qp.multipath, *packet->op)) transport::take_placement_header(*packet);
    execute_request(qp, *packet, qp.reorder->placed(psn));
    if (qp.expected_psn == psn) break;  // RNR: the requester resends it after the timer
    if (qp.state == QpState::err) break;
    qp.reorder->release(psn, qp.expected_psn);
    filled = true;
  }
  if (filled && qp.state != QpState::err) queue_ack(qp, psn_add(qp.expected_psn, -1));
}

}  // namespace uroce
