// The services the protocol roles share (role_context.h): completions and
// the flush to ERR, the ready list, and building a packet's headers.
#include "transport/role_context.h"

#include "transport/psn.h"
#include "wire/udp.h"

namespace uroce {

using transport::psn_at_or_before;
using transport::QueuePair;
using transport::SendWqe;

namespace {

WcOpcode completion_opcode(WrOpcode op) {
  switch (op) {
    case WrOpcode::rdma_write:
    case WrOpcode::rdma_write_with_imm:
      return WcOpcode::rdma_write;
    case WrOpcode::rdma_read:
      return WcOpcode::rdma_read;
    case WrOpcode::atomic_cmp_and_swp:
      return WcOpcode::comp_swap;
    case WrOpcode::atomic_fetch_and_add:
      return WcOpcode::fetch_add;
    case WrOpcode::atomic_write:
      return WcOpcode::atomic_write;
    case WrOpcode::bind_mw:
      return WcOpcode::bind_mw;
    case WrOpcode::local_inv:
      return WcOpcode::local_inv;
    default:
      return WcOpcode::send;
  }
}

}  // namespace

transport::RoleContext::RoleContext(const EngineConfig& engine_config)
    : config(engine_config), memory_regions(engine_config.seed ^ 0x6D656D6F7279ull) {}

void transport::RoleContext::mark_ready(QueuePair& qp) {
  if (qp.in_ready_list) return;
  qp.in_ready_list = true;
  ready.push_back(qp.qpn);
}

void transport::RoleContext::complete(std::uint32_t cq, const WorkCompletion& completion, bool solicited) {
  auto it = cqs.find(cq);
  if (it == cqs.end()) return;
  bool was_overflowed = it->second.overflowed();
  if (!it->second.push(completion)) {
    if (!was_overflowed) raise(AsyncEventType::cq_err, cq);
    return;
  }
  if (it->second.fires(solicited, completion.status != WcStatus::success)) cq_events.push_back(cq);
}

void transport::RoleContext::check_sq_drained(QueuePair& qp) {
  if (qp.state != QpState::sqd || !qp.events.sq_drain_notify) return;
  for (const transport::SendWqe& wqe : qp.req.send_queue) {
    if (!wqe.started) break;
    if (!wqe.done) return;
  }
  qp.events.sq_drain_notify = false;
  raise(AsyncEventType::sq_drained, qp.qpn);
}

void transport::RoleContext::move_to_error(QueuePair& qp) {
  qp.state = QpState::err;
  if (qp.srq != 0 && !qp.events.last_wqe_reported) {
    qp.events.last_wqe_reported = true;
    raise(AsyncEventType::qp_last_wqe_reached, qp.qpn);
  }
  for (transport::SendWqe& wqe : qp.req.send_queue) {
    if (!wqe.done) {
      wqe.done = true;
      wqe.status = WcStatus::wr_flush_err;
    }
  }
  retire_completed(qp);  // flushed WQEs complete whether signaled or not (ibv semantics)
  // The QP's own receives are flushed; an SRQ's stay for its other QPs.
  if (qp.resp.current_recv) qp.resp.recv_queue.push_front(std::move(*qp.resp.current_recv));
  qp.resp.current_recv.reset();
  for (const transport::RecvWqe& wqe : qp.resp.recv_queue) {
    complete(qp.recv_cq,
             WorkCompletion{
                 .wr_id = wqe.wr_id, .status = WcStatus::wr_flush_err, .opcode = WcOpcode::recv, .qp_num = qp.qpn});
  }
  qp.resp.recv_queue.clear();
  qp.resp.outputs.clear();
  qp.req.send_cursor = 0;
  qp.req.send_cursor_packet = 0;
  qp.req.outstanding_read_atomic = 0;
  qp.resp.receiving_send = qp.resp.receiving_write = false;
  if (qp.resp.reorder) qp.resp.reorder->clear();
  if (qp.comp.sacks) qp.comp.sacks->clear();
  if (qp.req.paths) qp.req.paths->clear();
  qp.comp.retransmit_deadline = kNever;
  qp.comp.rnr_resume_at = kNever;
}

wire::WireResult<wire::DatagramLayout> transport::RoleContext::begin_packet_to(
    const AddressVector& av, std::uint32_t dest_qp, std::uint16_t source_port, const wire::TransportHeaders& headers,
    std::size_t payload_length, MutableByteSpan out, std::uint32_t flow_label) {
  wire::RoceDatagramSpec spec;
  spec.headers = headers;
  spec.headers.bth.dest_qp = dest_qp;
  spec.headers.bth.pkey = wire::kDefaultPkey;
  spec.udp.src_port = source_port;
  auto dscp = static_cast<std::uint8_t>(av.traffic_class >> 2);
  // Data is ECN-capable; ACKs and CNPs are not, as RNICs send them, so no
  // switch marks them and no CNP answers them.
  const wire::OpcodeInfo* op = wire::find_opcode(headers.bth.opcode);
  wire::Ecn ecn = op != nullptr && op->ecn_capable() ? wire::Ecn::ect0 : wire::Ecn::not_ect;
  const Gid& source = av.sgid == Gid{} ? config.gid : av.sgid;
  built = Transmit{};
  built.destination = av.dgid;
  built.source_port = source_port;
  built.destination_port = spec.udp.dst_port;
  built.traffic_class = static_cast<std::uint8_t>(dscp << 2 | static_cast<std::uint8_t>(ecn));
  built.ipv4 = gid_is_ipv4(source) && gid_is_ipv4(av.dgid);
  built.kind = headers.bth.opcode == wire::opcode::kRcAcknowledge ? TransmitKind::acknowledge
               : headers.bth.opcode == wire::opcode::kCnp         ? TransmitKind::cnp
                                                                  : TransmitKind::data;
  if (built.ipv4) {
    wire::Ipv4Repr ip;
    ip.dscp = dscp;
    ip.ecn = ecn;
    ip.ttl = av.hop_limit;
    std::copy_n(source.begin() + 12, 4, ip.src.begin());
    std::copy_n(av.dgid.begin() + 12, 4, ip.dst.begin());
    spec.ip = ip;
  } else {
    wire::Ipv6Repr ip;
    ip.dscp = dscp;
    ip.ecn = ecn;
    ip.flow_label = flow_label != 0 ? flow_label : av.flow_label;
    ip.hop_limit = av.hop_limit;
    ip.src = source;
    ip.dst = av.dgid;
    spec.ip = ip;
  }
  auto layout = wire::begin_roce_datagram(spec, payload_length, out);
  if (layout) built.udp_payload_offset = layout->ip_header_length + wire::kUdpHeaderLength;
  return layout;
}

std::size_t transport::RoleContext::finish_packet(MutableByteSpan out, const wire::DatagramLayout& layout) {
  if (config.carry_payload && config.seal_icrc) wire::seal_roce_datagram(out, layout);
  ++counters.packets_sent;
  return layout.length;
}

void transport::RoleContext::retire_completed(QueuePair& qp) {
  while (!qp.req.send_queue.empty() && qp.req.send_queue.front().done) {
    SendWqe& wqe = qp.req.send_queue.front();
    if (wqe.signaled || qp.sq_sig_all || wqe.status != WcStatus::success) {
      WorkCompletion wc;
      wc.wr_id = wqe.wr_id;
      wc.status = wqe.status;
      wc.opcode = completion_opcode(wqe.opcode);
      wc.byte_len = wqe.length;
      wc.qp_num = qp.qpn;
      complete(qp.send_cq, wc);
    }
    // The responder keeps a record per READ/atomic until the requester moves
    // past it in order, so the limit counts until retirement, not completion.
    if (wqe.is_read_or_atomic() && wqe.packet_count > 0) --qp.req.outstanding_read_atomic;
    qp.req.send_queue.pop_front();
    if (qp.req.send_cursor > 0) {
      --qp.req.send_cursor;
    } else {
      qp.req.send_cursor_packet = 0;  // the WQE under the cursor is gone: start the next one
    }
  }
}

void transport::RoleContext::fail_request(QueuePair& qp, std::uint32_t psn, WcStatus status) {
  for (SendWqe& wqe : qp.req.send_queue) {
    if (wqe.done) continue;
    if (!wqe.started || psn_at_or_before(psn, wqe.last_psn()) || wqe.packet_count == 0) {
      wqe.done = true;
      wqe.status = status;
      break;
    }
  }
  retire_completed(qp);
  move_to_error(qp);
}

}  // namespace uroce
