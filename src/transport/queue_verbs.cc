// The engine's queue verbs: QPs (create, the attribute checks and state
// transitions of modify, query, destroy), shared receive queues, and posting
// send and receive work requests, which resolves their scatter/gather lists
// against the memory regions.
#include <algorithm>
#include <cstring>

#include "transport/engine_core.h"
#include "transport/psn.h"
#include "uroce/engine.h"
#include "verbs/qp_state_machine.h"

namespace uroce {

using transport::QpCreation;
using transport::QueuePair;

namespace {

// Where a local peer can read the bytes of a WR's one element, resolved in
// region: its file (RegionBacking), if the region has one.
std::optional<PayloadExtent> shared_extent(const verbs::MemoryRegion& region, const Sge& sge) {
  if (!region.backing) return std::nullopt;
  const RegionBacking& backing = *region.backing;
  std::uint64_t into_region = sge.addr - reinterpret_cast<std::uintptr_t>(region.addr);
  return PayloadExtent{backing.pid, backing.fd, backing.id, backing.offset + into_region};
}

// Resolves a WR's scatter/gather list; the first bad element decides the
// status. sole_region, if given, is set to the region of a lone element.
WcStatus resolve_segments(const verbs::MemoryRegionTable& regions, std::uint32_t pd, std::span<const Sge> sges,
                          bool needs_write, std::vector<transport::Segment>& out, std::uint64_t& total,
                          const verbs::MemoryRegion** sole_region = nullptr) {
  total = 0;
  out.reserve(sges.size());
  for (const Sge& sge : sges) {
    auto data = regions.resolve_local(sge.lkey, pd, sge.addr, sge.length, needs_write,
                                      sges.size() == 1 ? sole_region : nullptr);
    if (!data) return WcStatus::loc_prot_err;
    if (sge.length > 0) out.push_back(transport::Segment{*data, sge.length, sge.lkey});
    total += sge.length;
  }
  return WcStatus::success;
}

}  // namespace

Expected<std::uint32_t, std::errc> Engine::create_qp(const QpInitAttr& init) {
  const DeviceAttributes& limits = attributes();
  if (init.qp_type == QpType::xrc_recv) return create_xrc_recv_qp(init);
  // An xrc_send QP receives nothing: its receive CQ, if not given, is its send CQ.
  std::uint32_t recv_cq = init.qp_type == QpType::xrc_send && init.recv_cq == 0 ? init.send_cq : init.recv_cq;
  if (!core_->pds.contains(init.pd) || !core_->cqs.contains(init.send_cq) || !core_->cqs.contains(recv_cq)) {
    return unexpected(std::errc::invalid_argument);
  }
  if (init.qp_type == QpType::xrc_send && (init.srq != 0 || init.cap.max_recv_wr != 0)) {
    return unexpected(std::errc::invalid_argument);
  }
  const QpCap& cap = init.cap;
  if (cap.max_send_wr > limits.max_qp_wr || cap.max_recv_wr > limits.max_qp_wr || cap.max_send_sge > limits.max_sge ||
      cap.max_recv_sge > limits.max_sge || cap.max_inline_data > limits.max_inline_data) {
    return unexpected(std::errc::invalid_argument);
  }
  if (init.tail_timeout_ns < 0 || init.loss_probe_ns < 0) return unexpected(std::errc::invalid_argument);
  if (core_->qps.size() >= limits.max_qp) return unexpected(std::errc::not_enough_memory);
  if ((init.recovery == LossRecovery::selective_repeat || init.tail_timeout_ns != 0) && init.qp_type != QpType::rc) {
    return unexpected(std::errc::invalid_argument);
  }
  const MultipathConfig& multipath = init.multipath;
  if (multipath.entropy_values != 0 &&
      (init.recovery != LossRecovery::selective_repeat || multipath.entropy_values > 4096 ||
       multipath.reorder_window_ns <= 0 || multipath.avoid_ns < 0 || multipath.probe_after_ns <= 0 ||
       multipath.max_probe_after_ns < multipath.probe_after_ns || multipath.ack_every_packets == 0)) {
    return unexpected(std::errc::invalid_argument);
  }
  if (init.srq != 0) {
    auto srq = core_->srqs.find(init.srq);
    if (srq == core_->srqs.end() || srq->second.pd != init.pd || init.qp_type == QpType::uc) {
      return unexpected(std::errc::invalid_argument);
    }
  }
  if (init.gsi && (init.qp_type != QpType::ud || core_->qps.contains(kGsiQpn))) {
    return unexpected(init.qp_type != QpType::ud ? std::errc::invalid_argument : std::errc::device_or_resource_busy);
  }
  QpCreation created;
  created.srq = init.srq;
  created.qpn = init.gsi ? kGsiQpn : core_->fresh_qpn();
  created.type = init.qp_type;
  created.recovery = init.recovery;
  created.tail_timeout_ns = init.tail_timeout_ns;
  created.tail_timeout_packets = init.tail_timeout_packets;
  bool probes = init.qp_type == QpType::rc || init.qp_type == QpType::xrc_send;
  created.loss_probe_ns = probes ? init.loss_probe_ns : 0;
  created.multipath = init.multipath;
  created.pd = init.pd;
  created.send_cq = init.send_cq;
  created.recv_cq = recv_cq;
  created.sq_sig_all = init.sq_sig_all;
  created.block_self_multicast = init.block_self_multicast;
  created.cap = cap;
  created.cap.max_send_sge = std::max<std::uint32_t>(cap.max_send_sge, 1);
  created.cap.max_recv_sge = std::max<std::uint32_t>(cap.max_recv_sge, 1);
  created.udp_source_port = wire::roce_source_port(created.qpn);
  created.congestion_controlled = core_->config.congestion.reaction_point && init.congestion_controlled;
  QueuePair qp = core_->fresh_queue_pair(created);
  std::uint32_t qpn = qp.qpn;
  core_->qps.emplace(qpn, std::move(qp));
  return qpn;
}

// The responder half of XRC: a domain, and nothing else of its own until a
// request names an XRC SRQ (EngineCore::adopt_xrc_srq).
Expected<std::uint32_t, std::errc> Engine::create_xrc_recv_qp(const QpInitAttr& init) {
  auto domain = core_->xrcds.find(init.xrcd);
  if (domain == core_->xrcds.end() || init.srq != 0 || init.gsi) return unexpected(std::errc::invalid_argument);
  if (core_->qps.size() >= attributes().max_qp) return unexpected(std::errc::not_enough_memory);
  QpCreation created;
  created.qpn = core_->fresh_qpn();
  created.type = QpType::xrc_recv;
  created.xrcd = init.xrcd;
  created.udp_source_port = wire::roce_source_port(created.qpn);
  created.congestion_controlled = core_->config.congestion.reaction_point;
  QueuePair qp = core_->fresh_queue_pair(created);
  ++domain->second;
  std::uint32_t qpn = qp.qpn;
  core_->qps.emplace(qpn, std::move(qp));
  return qpn;
}

namespace {

std::errc check_attribute_values(const QpAttr& attr, std::uint32_t mask, const DeviceAttributes& limits) {
  constexpr std::uint32_t kKnownAccess = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                                         kAccessRemoteAtomic;
  bool ok = true;
  if (mask & kQpAttrPathMtu) {
    auto mtu = static_cast<std::uint8_t>(attr.path_mtu);
    ok &= mtu >= 1 && mtu <= 5;
  }
  if (mask & kQpAttrRetryCnt) ok &= attr.retry_cnt <= 7;
  if (mask & kQpAttrRnrRetry) ok &= attr.rnr_retry <= 7;
  if (mask & kQpAttrTimeout) ok &= attr.timeout <= 31;
  if (mask & kQpAttrMinRnrTimer) ok &= attr.min_rnr_timer <= 31;
  if (mask & kQpAttrMaxQpRdAtomic) ok &= attr.max_rd_atomic <= limits.max_qp_rd_atom;
  if (mask & kQpAttrMaxDestRdAtomic) ok &= attr.max_dest_rd_atomic <= limits.max_qp_init_rd_atom;
  if (mask & kQpAttrDestQpn) ok &= attr.dest_qp_num <= transport::kQpnMask;
  if (mask & kQpAttrRqPsn) ok &= attr.rq_psn <= transport::kPsnMask;
  if (mask & kQpAttrSqPsn) ok &= attr.sq_psn <= transport::kPsnMask;
  if (mask & kQpAttrAccessFlags) ok &= (attr.qp_access_flags & ~kKnownAccess) == 0;
  if (mask & kQpAttrPort) ok &= attr.port_num == 1;
  if (mask & kQpAttrPkeyIndex) ok &= attr.pkey_index == 0;
  return ok ? std::errc{} : std::errc::invalid_argument;
}

}  // namespace

std::errc Engine::modify_qp(std::uint32_t qpn, const QpAttr& attr, std::uint32_t mask) {
  auto it = core_->qps.find(qpn);
  if (it == core_->qps.end()) return std::errc::invalid_argument;
  QueuePair& qp = it->second;
  if ((mask & kQpAttrCurState) && attr.cur_qp_state != qp.state) return std::errc::invalid_argument;
  QpState next = (mask & kQpAttrState) ? attr.qp_state : qp.state;
  if (std::errc e = verbs::check_qp_transition(qp.type, qp.state, next, mask); e != std::errc{}) return e;
  if (std::errc e = check_attribute_values(attr, mask, attributes()); e != std::errc{}) return e;
  // A controlled Q_Key (high bit set) is for privileged QPs, QP 1's 0x80010000 among them.
  bool privileged = core_->config.allow_controlled_qkey || qp.qpn == 1;
  if ((mask & kQpAttrQkey) && (attr.qkey & kControlledQkeyBit) && !privileged) {
    return std::errc::operation_not_permitted;
  }

  QpAttr& a = qp.attr;
  if (mask & kQpAttrAccessFlags) a.qp_access_flags = attr.qp_access_flags;
  if (mask & kQpAttrPkeyIndex) a.pkey_index = attr.pkey_index;
  if (mask & kQpAttrPort) a.port_num = attr.port_num;
  if (mask & kQpAttrQkey) a.qkey = attr.qkey;
  if (mask & kQpAttrAv) a.ah_attr = attr.ah_attr;
  if (mask & kQpAttrPathMtu) a.path_mtu = attr.path_mtu;
  if (mask & kQpAttrTimeout) a.timeout = attr.timeout;
  if (mask & kQpAttrRetryCnt) a.retry_cnt = attr.retry_cnt;
  if (mask & kQpAttrRnrRetry) a.rnr_retry = attr.rnr_retry;
  if (mask & kQpAttrRqPsn) a.rq_psn = attr.rq_psn;
  if (mask & kQpAttrMaxQpRdAtomic) a.max_rd_atomic = attr.max_rd_atomic;
  if (mask & kQpAttrMinRnrTimer) a.min_rnr_timer = attr.min_rnr_timer;
  if (mask & kQpAttrSqPsn) a.sq_psn = attr.sq_psn;
  if (mask & kQpAttrMaxDestRdAtomic) a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
  if (mask & kQpAttrDestQpn) a.dest_qp_num = attr.dest_qp_num;

  QpState previous = qp.state;
  qp.state = next;
  a.qp_state = next;
  if (next == QpState::err && previous != QpState::err) {
    core_->move_to_error(qp);
  } else if (next == QpState::reset) {
    // Its completions still waiting go too (flushed WRs included), as mlx4
    // and mlx5 clean the CQ of a QP they reset: a QP restarted from RESET
    // finds its CQs as if it were new. rdma-core's tests rely on it.
    for (std::uint32_t cq : {qp.send_cq, qp.recv_cq}) {
      auto found = core_->cqs.find(cq);
      if (found != core_->cqs.end()) found->second.discard_qp(qp.qpn);
    }
    QpCreation created = qp;
    if (qp.type == QpType::xrc_recv) created.srq = 0;  // an XRC responder takes its SRQ per message
    bool in_ready_list = qp.in_ready_list;
    qp = core_->fresh_queue_pair(created);
    qp.in_ready_list = in_ready_list;
  }
  if (mask & kQpAttrRqPsn) qp.resp.expected_psn = attr.rq_psn;
  if (next == QpState::rtr && previous == QpState::init) {
    qp.resp.records.assign(a.max_dest_rd_atomic, transport::ReadAtomicRecord{});
    qp.resp.next_record = 0;
  }
  if (next == QpState::rtr && previous == QpState::init && qp.recovery == LossRecovery::selective_repeat) {
    qp.resp.reorder.emplace(core_->config.max_inflight_packets);
  }
  if (mask & kQpAttrSqPsn) {
    qp.req.next_psn = attr.sq_psn;
    qp.comp.acked_psn = transport::psn_add(attr.sq_psn, -1);
    if (qp.recovery == LossRecovery::selective_repeat) {
      qp.comp.sacks.emplace(core_->config.max_inflight_packets);
      qp.comp.sacks->reset(attr.sq_psn);
      if (qp.multipath.entropy_values != 0) {
        qp.req.paths.emplace(qp.multipath, qp.qpn, core_->config.max_inflight_packets, core_->counters);
      }
    }
  }
  if (next == QpState::rts && previous == QpState::rtr) {
    qp.comp.retries_left = a.retry_cnt;
    qp.comp.rnr_retries_left = a.rnr_retry;
  }
  if (next == QpState::sqd && previous == QpState::rts) {
    qp.events.sq_drain_notify = (mask & kQpAttrEnSqdAsyncNotify) && attr.en_sqd_async_notify;
    core_->check_sq_drained(qp);
  }
  if (next == QpState::rts) core_->mark_ready(qp);
  return std::errc{};
}

Expected<QpAttr, std::errc> Engine::query_qp(std::uint32_t qpn) const {
  auto it = core_->qps.find(qpn);
  if (it == core_->qps.end()) return unexpected(std::errc::invalid_argument);
  const QueuePair& qp = it->second;
  QpAttr attr = qp.attr;
  attr.qp_state = attr.cur_qp_state = qp.state;
  attr.cap = qp.cap;
  attr.sq_psn = qp.req.next_psn;  // live, as Soft-RoCE reports them
  attr.rq_psn = qp.resp.expected_psn;
  attr.sq_draining =
      qp.state == QpState::sqd && std::any_of(qp.req.send_queue.begin(), qp.req.send_queue.end(),
                                              [](const transport::SendWqe& wqe) { return wqe.started && !wqe.done; });
  return attr;
}

Expected<std::uint32_t, std::errc> Engine::create_srq(std::uint32_t pd, std::uint32_t max_wr, std::uint32_t max_sge) {
  const DeviceAttributes& limits = attributes();
  if (!core_->pds.contains(pd) || max_wr == 0 || max_wr > limits.max_srq_wr || max_sge > limits.max_sge) {
    return unexpected(std::errc::invalid_argument);
  }
  if (core_->srqs.size() >= limits.max_srq) return unexpected(std::errc::not_enough_memory);
  std::uint32_t srq = core_->next_srq++;
  core_->srqs.emplace(srq, transport::SharedReceiveQueue{pd, max_wr, std::max<std::uint32_t>(max_sge, 1), {}});
  return srq;
}

std::errc Engine::destroy_srq(std::uint32_t srq) {
  if (!core_->srqs.contains(srq)) return std::errc::invalid_argument;
  for (const auto& [qpn, qp] : core_->qps) {
    if (qp.srq == srq && qp.type != QpType::xrc_recv) return std::errc::device_or_resource_busy;
  }
  if (std::uint32_t xrcd = core_->srqs.at(srq).xrcd; xrcd != 0) --core_->xrcds.at(xrcd);
  core_->srqs.erase(srq);
  return std::errc{};
}

std::errc Engine::post_srq_recv(std::uint32_t srq, const RecvWr& wr) {
  auto it = core_->srqs.find(srq);
  if (it == core_->srqs.end()) return std::errc::invalid_argument;
  transport::SharedReceiveQueue& shared = it->second;
  if (shared.queue.size() >= shared.max_wr) return std::errc::not_enough_memory;
  if (wr.sg_list.size() > shared.max_sge) return std::errc::invalid_argument;
  transport::RecvWqe wqe;
  wqe.wr_id = wr.wr_id;
  wqe.local_error = resolve_segments(core_->memory_regions, shared.pd, wr.sg_list, true, wqe.segments, wqe.capacity);
  wqe.pd = shared.pd;
  wqe.registrations = core_->memory_regions.changes();
  shared.queue.push_back(std::move(wqe));
  return std::errc{};
}

std::errc Engine::arm_srq_limit(std::uint32_t srq, std::uint32_t limit) {
  auto it = core_->srqs.find(srq);
  if (it == core_->srqs.end() || limit > it->second.max_wr) return std::errc::invalid_argument;
  it->second.limit = limit;
  return std::errc{};
}

std::errc Engine::destroy_qp(std::uint32_t qpn) {
  auto it = core_->qps.find(qpn);
  if (it == core_->qps.end()) return std::errc::invalid_argument;
  for (std::uint32_t cq : {it->second.send_cq, it->second.recv_cq}) {
    auto found = core_->cqs.find(cq);
    if (found != core_->cqs.end()) found->second.discard_qp(qpn);
  }
  if (it->second.type == QpType::xrc_recv) --core_->xrcds.at(it->second.xrcd);
  for (const Gid& group : multicast_groups_of(qpn)) detach_multicast(qpn, group);
  core_->erase_qp(qpn);
  return std::errc{};
}

bool Engine::has_completions_waiting(std::uint32_t qpn) const {
  auto it = core_->qps.find(qpn);
  if (it == core_->qps.end()) return false;
  for (std::uint32_t cq : {it->second.send_cq, it->second.recv_cq}) {
    auto found = core_->cqs.find(cq);
    if (found != core_->cqs.end() && found->second.holds(qpn)) return true;
  }
  return false;
}


std::errc Engine::post_send(std::uint32_t qpn, const SendWr& wr) {
  auto it = core_->qps.find(qpn);
  if (it == core_->qps.end()) return std::errc::invalid_argument;
  QueuePair& qp = it->second;
  if (qp.state == QpState::reset || qp.state == QpState::init || qp.state == QpState::rtr ||
      qp.type == QpType::xrc_recv) {
    return std::errc::invalid_argument;
  }
  if (qp.req.send_queue.size() >= qp.cap.max_send_wr) return std::errc::not_enough_memory;
  if (wr.sg_list.size() > qp.cap.max_send_sge) return std::errc::invalid_argument;
  bool atomic = wr.opcode == WrOpcode::atomic_cmp_and_swp || wr.opcode == WrOpcode::atomic_fetch_and_add;
  bool inline_data = (wr.send_flags & kSendInline) != 0;
  switch (wr.opcode) {
    case WrOpcode::rdma_write:
    case WrOpcode::rdma_write_with_imm:
    case WrOpcode::send:
    case WrOpcode::send_with_imm:
    case WrOpcode::send_with_inv:
    case WrOpcode::rdma_read:
    case WrOpcode::atomic_cmp_and_swp:
    case WrOpcode::atomic_fetch_and_add:
    case WrOpcode::atomic_write:
    case WrOpcode::bind_mw:
    case WrOpcode::local_inv: break;
    default: return std::errc::invalid_argument;
  }
  bool local_operation = wr.opcode == WrOpcode::bind_mw || wr.opcode == WrOpcode::local_inv;
  if (local_operation && (qp.type == QpType::ud || !wr.sg_list.empty() || inline_data)) {
    return std::errc::invalid_argument;
  }
  if (inline_data && (wr.opcode == WrOpcode::rdma_read || atomic)) return std::errc::invalid_argument;
  bool atomic_write = wr.opcode == WrOpcode::atomic_write;
  bool rc_only =
      wr.opcode == WrOpcode::rdma_read || atomic || atomic_write || wr.opcode == WrOpcode::send_with_inv;
  if (qp.type == QpType::uc && rc_only) return std::errc::invalid_argument;
  const EngineCore::AddressHandle* destination = nullptr;
  if (qp.type == QpType::ud) {
    if (wr.opcode != WrOpcode::send && wr.opcode != WrOpcode::send_with_imm) return std::errc::invalid_argument;
    auto ah = core_->address_handles.find(wr.ud.ah);
    if (ah == core_->address_handles.end() || ah->second.pd != qp.pd) return std::errc::invalid_argument;
    if (wr.ud.remote_qpn > transport::kQpnMask) return std::errc::invalid_argument;
    destination = &ah->second;
  }

  transport::SendWqe wqe;
  wqe.wr_id = wr.wr_id;
  wqe.opcode = wr.opcode;
  wqe.signaled = (wr.send_flags & kSendSignaled) != 0;
  wqe.solicited = (wr.send_flags & kSendSolicited) != 0;
  wqe.fence = (wr.send_flags & kSendFence) != 0;
  wqe.imm_data = wr.imm_data;
  wqe.invalidate_rkey = wr.invalidate_rkey;
  wqe.bind = wr.bind;
  wqe.xrc_srqn = wr.xrc_remote_srqn;
  wqe.remote_addr = atomic ? wr.atomic.remote_addr : wr.rdma.remote_addr;
  wqe.rkey = atomic ? wr.atomic.rkey : wr.rdma.rkey;
  wqe.compare_add = wr.atomic.compare_add;
  wqe.swap = wr.atomic.swap;

  std::uint64_t total = 0;
  const verbs::MemoryRegion* sole_region = nullptr;  // a lone element's, for a shared extent
  if (inline_data) {
    for (const Sge& sge : wr.sg_list) total += sge.length;
    // An atomic write's 8 bytes ride in the WQE whatever the QP's inline cap, as atomics' operands do.
    if (total > qp.cap.max_inline_data && !atomic_write) return std::errc::invalid_argument;
    // Inline data is copied now: the caller may reuse its buffer at once.
    wqe.inline_data.reserve(total);
    if (!core_->config.carry_payload) wqe.inline_data.resize(total);  // lengths only: nothing to read
    for (const Sge& sge : wr.sg_list) {
      if (!core_->config.carry_payload) break;
      const auto* bytes = reinterpret_cast<const std::uint8_t*>(static_cast<std::uintptr_t>(sge.addr));
      wqe.inline_data.insert(wqe.inline_data.end(), bytes, bytes + sge.length);
    }
  } else {
    bool writes_local = wr.opcode == WrOpcode::rdma_read || atomic;
    wqe.local_error =
        resolve_segments(core_->memory_regions, qp.pd, wr.sg_list, writes_local, wqe.segments, total, &sole_region);
    wqe.registrations = core_->memory_regions.changes();
  }
  if ((atomic || atomic_write) && total != 8) return std::errc::invalid_argument;
  if (destination != nullptr) {
    if (total > mtu_bytes(core_->config.port_mtu)) return std::errc::invalid_argument;  // one packet per datagram
    wqe.ud_destination = destination->av;
    wqe.ud_remote_qpn = wr.ud.remote_qpn;
    // A Q_Key with the top bit set means "use the QP's own" (IBTA 10.2.4).
    wqe.ud_qkey = (wr.ud.remote_qkey & kControlledQkeyBit) ? qp.attr.qkey : wr.ud.remote_qkey;
  }
  if (total > attributes().max_msg_size) return std::errc::invalid_argument;
  wqe.length = static_cast<std::uint32_t>(total);
  // Inline data and lists of several elements leave sole_region unset.
  if (qp.type == QpType::rc && !rc_only && sole_region != nullptr && wqe.local_error == WcStatus::success) {
    wqe.extent = shared_extent(*sole_region, wr.sg_list[0]);
  }

  qp.req.send_queue.push_back(std::move(wqe));
  if (qp.state == QpState::err) {
    core_->move_to_error(qp);  // flushes it at once
  } else {
    core_->mark_ready(qp);
  }
  return std::errc{};
}

std::errc Engine::post_recv(std::uint32_t qpn, const RecvWr& wr) {
  auto it = core_->qps.find(qpn);
  if (it == core_->qps.end()) return std::errc::invalid_argument;
  QueuePair& qp = it->second;
  if (qp.state == QpState::reset || qp.srq != 0 || qp.type == QpType::xrc_send || qp.type == QpType::xrc_recv) {
    return std::errc::invalid_argument;
  }
  if (qp.resp.recv_queue.size() >= qp.cap.max_recv_wr) return std::errc::not_enough_memory;
  if (wr.sg_list.size() > qp.cap.max_recv_sge) return std::errc::invalid_argument;
  transport::RecvWqe wqe;
  wqe.wr_id = wr.wr_id;
  wqe.local_error = resolve_segments(core_->memory_regions, qp.pd, wr.sg_list, true, wqe.segments, wqe.capacity);
  wqe.pd = qp.pd;
  wqe.registrations = core_->memory_regions.changes();
  qp.resp.recv_queue.push_back(std::move(wqe));
  if (qp.state == QpState::err) core_->move_to_error(qp);
  return std::errc{};
}

}  // namespace uroce
