// The engine's object tables (PDs, MRs, CQs, address handles, events), the
// receive checks' hook and datagram dispatch, transmit scheduling and timers.
// QP and SRQ verbs and posting live in queue_verbs.cc; the protocol in its
// three roles (requester.h, completer.h, responder.h).
#include "uroce/engine.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/splitmix64.h"
#include "transport/engine_core.h"
#include "transport/psn.h"
#include "transport/receive_checks.h"
#include "transport/registered_copy.h"
#include "transport/xrc.h"
#include "wire/udp.h"

namespace uroce {

using transport::QueuePair;

namespace transport {

void gather(const std::vector<Segment>& segments, std::uint64_t offset, std::uint8_t* out, std::uint64_t length) {
  for_each_piece(segments, offset, length, [&out](const std::uint8_t* piece, std::uint64_t n) {
    copy_registered(out, piece, n);
    out += n;
  });
}

void scatter(const std::vector<Segment>& segments, std::uint64_t offset, const std::uint8_t* in,
             std::uint64_t length) {
  for_each_piece(segments, offset, length, [&in](std::uint8_t* piece, std::uint64_t n) {
    copy_registered(piece, in, n);
    in += n;
  });
}

TimeNs rnr_timer_ns(std::uint8_t code) {
  // The IBTA specification's RNR timer table (the code of an RNR NAK or
  // min_rnr_timer), in units of 10 us; code 0 is the longest, 655.36 ms.
  static constexpr std::uint32_t kTenMicroseconds[32] = {
      65536, 1,   2,   3,   4,   6,   8,   12,   16,   24,   32,   48,   64,   96,    128,   192,
      256,   384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152};
  return TimeNs{kTenMicroseconds[code & 31]} * 10'000;
}

}  // namespace transport

EngineCore::EngineCore(const EngineConfig& engine_config)
    : transport::RoleContext(engine_config), qpn_state(engine_config.seed) {
  raise(AsyncEventType::port_active, 1);  // the port is up from the start
}

std::uint32_t EngineCore::fresh_qpn() {
  while (true) {
    auto qpn = static_cast<std::uint32_t>(splitmix64(qpn_state) >> 40) & transport::kQpnMask;
    if (config.qpn_member) {
      constexpr std::uint32_t kMemberBits = std::uint32_t{0xF} << kQpnMemberShift;
      qpn = (qpn & ~kMemberBits) | (std::uint32_t{*config.qpn_member & 0xFu} << kQpnMemberShift);
    }
    // 0 and 1 are the special QPs; 0xFFFFFF names a multicast group's members.
    if (qpn > 1 && qpn != kMulticastQpn && !qps.contains(qpn)) return qpn;
  }
}

void EngineCore::schedule_timer(QueuePair& qp) {
  TimeNs deadline = qp.next_deadline();
  if (deadline >= qp.timer_at) return;
  qp.timer_at = deadline;
  timers.push(TimerEntry{deadline, qp.qpn});
}

TimeNs EngineCore::earliest_timer() {
  while (!timers.empty()) {
    const TimerEntry& top = timers.top();
    const QueuePair* qp = find_qp(top.qpn);
    if (qp != nullptr && qp->timer_at == top.at) return top.at;
    timers.pop();
  }
  return kNever;
}

void EngineCore::on_qp_timer(QueuePair& qp, TimeNs now) {
  bool loss_check = qp.req.paths && qp.req.paths->loss_check_at() <= now;
  if (qp.comp.retransmit_deadline <= now || qp.comp.rnr_resume_at <= now || loss_check) completer.on_timer(qp, now);
  if (qp.req.probe_deadline <= now) requester.on_probe_timer(qp, now);
  if (qp.cc.dcqcn) {
    qp.cc.dcqcn->on_timer(now);
    repace(qp);
  }
  if (qp.cc.pacing_blocked && qp.cc.next_send_time <= now) {
    qp.cc.pacing_blocked = false;
    mark_ready(qp);
  }
}

// ---------------------------------------------------------------------------

std::string_view to_string(AsyncEventType type) {
  switch (type) {
    case AsyncEventType::cq_err: return "CQ error";
    case AsyncEventType::qp_fatal: return "local work queue catastrophic error";
    case AsyncEventType::qp_req_err: return "invalid request local work queue error";
    case AsyncEventType::qp_access_err: return "local access violation work queue error";
    case AsyncEventType::comm_est: return "communication established";
    case AsyncEventType::sq_drained: return "send queue drained";
    case AsyncEventType::port_active: return "port active";
    case AsyncEventType::srq_limit_reached: return "SRQ limit reached";
    case AsyncEventType::qp_last_wqe_reached: return "last WQE reached";
  }
  return "unknown event";
}

Engine::Engine(const EngineConfig& config) : core_(std::make_unique<EngineCore>(config)) {}
Engine::~Engine() = default;

const DeviceAttributes& Engine::attributes() const { return core_->config.attributes; }
const Gid& Engine::gid() const { return core_->config.gid; }
const EngineCounters& Engine::counters() const { return core_->counters; }

Expected<std::uint32_t, std::errc> Engine::alloc_pd() {
  if (core_->pds.size() >= attributes().max_pd) return unexpected(std::errc::not_enough_memory);
  std::uint32_t pd = core_->next_pd++;
  core_->pds.insert(pd);
  return pd;
}

std::errc Engine::dealloc_pd(std::uint32_t pd) {
  if (!core_->pds.contains(pd)) return std::errc::invalid_argument;
  if (core_->memory_regions.pd_in_use(pd)) return std::errc::device_or_resource_busy;
  for (const auto& [qpn, qp] : core_->qps) {
    if (qp.pd == pd) return std::errc::device_or_resource_busy;
  }
  for (const auto& [ah, handle] : core_->address_handles) {
    if (handle.pd == pd) return std::errc::device_or_resource_busy;
  }
  for (const auto& [srq, shared] : core_->srqs) {
    if (shared.pd == pd) return std::errc::device_or_resource_busy;
  }
  core_->pds.erase(pd);
  return std::errc{};
}

Expected<MrKeys, std::errc> Engine::reg_mr(std::uint32_t pd, void* addr, std::uint64_t length, std::uint32_t access,
                                           const std::optional<RegionBacking>& backing) {
  if (!core_->pds.contains(pd)) return unexpected(std::errc::invalid_argument);
  if (length > attributes().max_mr_size && !verbs::is_implicit_region(addr, length, access)) {
    return unexpected(std::errc::invalid_argument);
  }
  if (core_->memory_regions.size() >= attributes().max_mr) return unexpected(std::errc::not_enough_memory);
  auto region = core_->memory_regions.register_region(pd, addr, length, access, backing);
  if (!region) return unexpected(region.error());
  return MrKeys{(*region)->lkey, (*region)->rkey};
}

std::errc Engine::rereg_mr(std::uint32_t lkey, std::uint32_t pd, void* addr, std::uint64_t length,
                           std::uint32_t access, const std::optional<RegionBacking>& backing) {
  if (!core_->pds.contains(pd)) return std::errc::invalid_argument;
  if (length > attributes().max_mr_size && !verbs::is_implicit_region(addr, length, access)) {
    return std::errc::invalid_argument;
  }
  return core_->memory_regions.reregister(lkey, pd, addr, length, access, backing);
}

std::errc Engine::check_local(std::uint32_t pd, const Sge& sge, bool write) const {
  auto found = core_->memory_regions.resolve_local(sge.lkey, pd, sge.addr, sge.length, write);
  if (found) return std::errc{};
  return found.error() == verbs::AccessError::unmapped ? std::errc::bad_address : std::errc::invalid_argument;
}

Expected<std::uint32_t, std::errc> Engine::alloc_mw(std::uint32_t pd, std::uint8_t type) {
  if (!core_->pds.contains(pd)) return unexpected(std::errc::invalid_argument);
  return core_->memory_regions.allocate_window(pd, type);
}

std::errc Engine::dealloc_mw(std::uint32_t rkey) { return core_->memory_regions.deallocate_window(rkey); }

std::errc Engine::dereg_mr(std::uint32_t lkey) { return core_->memory_regions.deregister(lkey); }

Expected<std::uint32_t, std::errc> Engine::create_cq(std::uint32_t cqe) {
  if (cqe == 0 || cqe > attributes().max_cqe) return unexpected(std::errc::invalid_argument);
  if (core_->cqs.size() >= attributes().max_cq) return unexpected(std::errc::not_enough_memory);
  std::uint32_t cq = core_->next_cq++;
  core_->cqs.emplace(cq, verbs::CompletionQueue(cqe));
  return cq;
}

std::errc Engine::resize_cq(std::uint32_t cq, std::uint32_t cqe) {
  auto it = core_->cqs.find(cq);
  if (it == core_->cqs.end() || cqe > attributes().max_cqe) return std::errc::invalid_argument;
  return it->second.resize(cqe) ? std::errc{} : std::errc::invalid_argument;
}

std::errc Engine::destroy_cq(std::uint32_t cq) {
  if (!core_->cqs.contains(cq)) return std::errc::invalid_argument;
  for (const auto& [qpn, qp] : core_->qps) {
    if (qp.send_cq == cq || qp.recv_cq == cq) return std::errc::device_or_resource_busy;
  }
  core_->cqs.erase(cq);
  std::erase(core_->cq_events, cq);
  return std::errc{};
}

Expected<std::size_t, std::errc> Engine::poll_cq(std::uint32_t cq, std::span<WorkCompletion> out) {
  auto it = core_->cqs.find(cq);
  if (it == core_->cqs.end()) return unexpected(std::errc::invalid_argument);
  if (it->second.overflowed()) return unexpected(std::errc::no_buffer_space);
  return it->second.poll(out);
}

std::errc Engine::req_notify_cq(std::uint32_t cq, bool solicited_only) {
  auto it = core_->cqs.find(cq);
  if (it == core_->cqs.end()) return std::errc::invalid_argument;
  it->second.arm(solicited_only);
  return std::errc{};
}

std::optional<std::uint32_t> Engine::poll_cq_event() {
  if (core_->cq_events.empty()) return std::nullopt;
  std::uint32_t cq = core_->cq_events.front();
  core_->cq_events.pop_front();
  return cq;
}

bool Engine::cq_event_pending() const { return !core_->cq_events.empty(); }

std::optional<AsyncEvent> Engine::poll_async_event() {
  if (core_->events.empty()) return std::nullopt;
  AsyncEvent event = core_->events.front();
  core_->events.pop_front();
  return event;
}

Expected<std::uint32_t, std::errc> Engine::create_ah(std::uint32_t pd, const AddressVector& av) {
  if (!core_->pds.contains(pd)) return unexpected(std::errc::invalid_argument);
  std::uint32_t ah = core_->next_ah++;
  core_->address_handles.emplace(ah, EngineCore::AddressHandle{pd, av});
  return ah;
}

std::errc Engine::destroy_ah(std::uint32_t ah) {
  return core_->address_handles.erase(ah) == 1 ? std::errc{} : std::errc::invalid_argument;
}

void Engine::on_datagram(std::span<const std::uint8_t> bytes, TimeNs now, bool verify_icrc, ExtentSource* extents) {
  EngineCore& s = *core_;
  ++s.counters.packets_received;
  auto datagram = wire::parse_roce_datagram(bytes, verify_icrc ? wire::IcrcCheck::verify : wire::IcrcCheck::skip);
  if (!datagram) {
    ++s.counters.malformed_packets;
    return;
  }
  if (!verify_icrc) {
    ++s.counters.icrc_unchecked;
  } else if (!datagram->icrc_ok) {
    ++s.counters.icrc_errors;
    return;
  }
  wire::RocePacket& packet = datagram->packet;
  if (packet.headers.bth.extent_payload && extents == nullptr) {
    ++s.counters.extents_from_wire;  // names memory of a process on another host: nothing to read
    return;
  }
  s.arrival_port = datagram->udp.src_port;
  if (transport::drop_if_rejected(s.counters, transport::check_pkey(packet))) return;
  if (packet.op->transport == wire::Transport::cnp) {
    QueuePair* target = s.find_qp(packet.headers.bth.dest_qp);
    if (target == nullptr) {
      ++s.counters.unknown_qp_packets;
      return;
    }
    auto known_ud_destination = [&s](std::uint32_t pd, const Gid& from) {
      for (const auto& [handle, ah] : s.address_handles) {
        if (ah.pd == pd && ah.av.dgid == from) return true;
      }
      return false;
    };
    if (transport::drop_if_rejected(
            s.counters, transport::check_cnp_source(*target, *datagram, known_ud_destination))) {
      return;
    }
    ++s.counters.cnps_received;
    if (target->req.paths) target->req.paths->congested(datagram->udp.src_port, now);
    if (target->cc.dcqcn) {
      target->cc.dcqcn->on_cnp(now);
      s.repace(*target);
    }
    s.schedule_timer(*target);
    return;
  }
  if (packet.headers.bth.dest_qp == kMulticastQpn) return s.on_multicast(*datagram, datagram->ip_header);
  QpType type = transport::receiving_qp_type(*packet.op);
  QueuePair* found = s.find_qp(packet.headers.bth.dest_qp);
  if (found == nullptr || found->type != type) {
    ++s.counters.unknown_qp_packets;
    return;
  }
  QueuePair& qp = *found;
  if (transport::drop_if_rejected(s.counters, transport::check_sender(qp, *datagram))) return;
  qp.req.peer_local = extents != nullptr;
  if (packet.headers.bth.extent_payload && !s.take_extent_payload(qp, packet, *extents)) return;
  struct PeerPayloadDone {  // a payload in a peer's memory is the one packet's only
    EngineCore& core;
    ~PeerPayloadDone() {
      if (core.peer_payload && core.peer_payload->unread > 0) ++core.counters.extents_unreadable;
      core.peer_payload.reset();
    }
  } peer_payload_done{s};
  if (qp.state == QpState::rtr && type != QpType::ud && !qp.events.communication_established) {
    qp.events.communication_established = true;
    s.raise(AsyncEventType::comm_est, qp.qpn);
  }
  wire::Ecn ecn = datagram->ip_version() == 4 ? std::get<wire::Ipv4Repr>(datagram->ip).ecn
                                              : std::get<wire::Ipv6Repr>(datagram->ip).ecn;
  if (ecn == wire::Ecn::ce && packet.op->ecn_capable()) s.on_congestion_experienced(qp, *datagram, now);
  switch (packet.op->kind) {
    case wire::OpKind::acknowledge:
    case wire::OpKind::atomic_acknowledge:
    case wire::OpKind::rdma_read_response:
      s.completer.on_response(qp, packet, now);
      break;
    default:
      if (type == QpType::ud) {
        s.responder.on_datagram(qp, packet, datagram->ip_header);
      } else if (type == QpType::xrc_recv && !s.responder.adopt_xrc_srq(qp, packet)) {
        break;
      } else {
        s.responder.on_request(qp, packet, datagram->udp_payload);
      }
      break;
  }
  s.schedule_timer(qp);
  s.check_sq_drained(qp);
}

Transmit Engine::poll_transmit(std::span<std::uint8_t> out, TimeNs now) {
  EngineCore& s = *core_;
  while (!s.ready.empty()) {
    std::uint32_t qpn = s.ready.front();
    s.ready.pop_front();
    QueuePair* found = s.find_qp(qpn);
    if (found == nullptr) continue;
    QueuePair& qp = *found;
    qp.in_ready_list = false;
    std::size_t length = s.responder.transmit(qp, out, now);
    if (length == 0) length = s.requester.transmit(qp, out, now);
    s.schedule_timer(qp);
    s.check_sq_drained(qp);
    if (length > 0) {
      s.mark_ready(qp);  // it may have more; it drops out when it has nothing
      Transmit described = s.built;  // noted as it was laid out: nothing is read back
      described.length = length;
      return described;
    }
  }
  return {};
}

TimeNs Engine::next_deadline() const { return core_->earliest_timer(); }

void Engine::on_timer(TimeNs now) {
  EngineCore& s = *core_;
  // Take every due entry first: handling one may re-arm it for now again.
  std::vector<std::uint32_t>& due = s.due_timers;
  due.clear();
  while (s.earliest_timer() <= now) {
    std::uint32_t qpn = s.timers.top().qpn;
    s.timers.pop();
    s.find_qp(qpn)->timer_at = kNever;  // earliest_timer found it
    due.push_back(qpn);
  }
  for (std::uint32_t qpn : due) {
    QueuePair* qp = s.find_qp(qpn);
    if (qp == nullptr) continue;
    s.on_qp_timer(*qp, now);
    s.schedule_timer(*qp);
  }
}

Expected<double, std::errc> Engine::qp_rate_bps(std::uint32_t qpn) const {
  auto it = core_->qps.find(qpn);
  if (it == core_->qps.end()) return unexpected(std::errc::invalid_argument);
  const QueuePair& qp = it->second;
  return qp.cc.dcqcn ? qp.cc.dcqcn->rate_bps() : core_->config.congestion.dcqcn.line_rate_bps;
}

std::string Engine::describe() const {
  std::string text;
  for (const auto& [qpn, qp] : core_->qps) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "qp %06x %s sq=%zu cursor=%zu/%u next_psn=%06x acked=%06x rd_atomic=%u deadline=%lld rnr=%lld "
                  "rq=%zu expected=%06x outputs=%zu ready=%d\n",
                  qpn, std::string(to_string(qp.state)).c_str(), qp.req.send_queue.size(), qp.req.send_cursor,
                  qp.req.send_cursor_packet, qp.req.next_psn, qp.comp.acked_psn, qp.req.outstanding_read_atomic,
                  static_cast<long long>(qp.comp.retransmit_deadline), static_cast<long long>(qp.comp.rnr_resume_at),
                  qp.resp.recv_queue.size(), qp.resp.expected_psn, qp.resp.outputs.size(), qp.in_ready_list);
    text += line;
    for (std::size_t i = 0; i < std::min<std::size_t>(qp.req.send_queue.size(), 3); ++i) {
      const transport::SendWqe& w = qp.req.send_queue[i];
      std::snprintf(line, sizeof line, "   wqe %zu op=%d len=%u started=%d first=%06x count=%u done=%d recv=%llu\n", i,
                    int(w.opcode), w.length, w.started, w.first_psn, w.packet_count, w.done,
                    static_cast<unsigned long long>(w.read_received));
      text += line;
    }
  }
  return text;
}

}  // namespace uroce
