// QP pair setup for simulated flows.
#include "sim/qp_setup.h"

#include <stdexcept>

namespace uroce::sim {

namespace {

std::uint32_t create_qp(HostNode& host, const HostNode& peer, const TransportSpec& transport,
                        std::uint32_t send_queue_depth, std::uint32_t receive_queue_depth) {
  QpInitAttr init;
  init.qp_type = QpType::rc;
  init.pd = host.pd();
  init.send_cq = init.recv_cq = host.cq();
  init.cap = QpCap{send_queue_depth, receive_queue_depth, 1, 1, 0};
  init.recovery = transport.recovery;
  init.tail_timeout_ns = transport.tail_timeout_ns;
  init.tail_timeout_packets = transport.tail_timeout_packets;
  init.loss_probe_ns = transport.loss_probe_ns;
  init.multipath = transport.multipath;
  init.congestion_controlled = !host.same_server(peer.id());  // NVLink has flow control of its own
  auto qpn = host.engine().create_qp(init);
  if (!qpn) throw std::runtime_error("simulated host " + std::to_string(host.id()) + ": create_qp refused");
  return *qpn;
}

void bring_up(HostNode& host, std::uint32_t qpn, HostNode& peer, std::uint32_t peer_qpn,
              const TransportSpec& transport) {
  Engine& engine = host.engine();
  QpAttr attr;
  attr.qp_state = QpState::init;
  attr.port_num = 1;
  attr.qp_access_flags = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
  bool ok = engine.modify_qp(qpn, attr, kQpAttrState | kQpAttrPkeyIndex | kQpAttrPort | kQpAttrAccessFlags) ==
            std::errc{};
  attr.qp_state = QpState::rtr;
  attr.path_mtu = transport.mtu;
  attr.dest_qp_num = peer_qpn;
  attr.rq_psn = 0;
  attr.max_dest_rd_atomic = 16;
  attr.min_rnr_timer = 1;
  attr.ah_attr.dgid = peer.engine().gid();
  attr.ah_attr.traffic_class = static_cast<std::uint8_t>(transport.data_dscp << 2);
  ok = ok && engine.modify_qp(qpn, attr,
                              kQpAttrState | kQpAttrAv | kQpAttrPathMtu | kQpAttrDestQpn | kQpAttrRqPsn |
                                  kQpAttrMaxDestRdAtomic | kQpAttrMinRnrTimer) == std::errc{};
  attr.qp_state = QpState::rts;
  attr.sq_psn = 0;
  attr.timeout = transport.timeout;
  attr.retry_cnt = transport.retry_cnt;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 16;
  ok = ok && engine.modify_qp(qpn, attr,
                              kQpAttrState | kQpAttrSqPsn | kQpAttrTimeout | kQpAttrRetryCnt | kQpAttrRnrRetry |
                                  kQpAttrMaxQpRdAtomic) == std::errc{};
  if (!ok) throw std::runtime_error("simulated host " + std::to_string(host.id()) + ": modify_qp refused");
}

}  // namespace

std::pair<std::uint32_t, std::uint32_t> connect_rc_pair(HostNode& a, HostNode& b, const TransportSpec& transport,
                                                        std::uint32_t send_queue_depth,
                                                        std::uint32_t receive_queue_depth) {
  std::uint32_t qpn_a = create_qp(a, b, transport, send_queue_depth, receive_queue_depth);
  std::uint32_t qpn_b = create_qp(b, a, transport, send_queue_depth, receive_queue_depth);
  bring_up(a, qpn_a, b, qpn_b, transport);
  bring_up(b, qpn_b, a, qpn_a, transport);
  return {qpn_a, qpn_b};
}

void post_arrival_receive(HostNode& host, std::uint32_t qpn, std::uint64_t wr_id) {
  RecvWr receive;
  receive.wr_id = wr_id;
  if (host.engine().post_recv(qpn, receive) != std::errc{}) {
    throw std::runtime_error("simulated host " + std::to_string(host.id()) + ": post_recv refused");
  }
}

std::pair<std::uint32_t, std::uint32_t> connect_arrival_pair(HostNode& a, HostNode& b, const TransportSpec& transport,
                                                             std::uint32_t send_queue_depth, std::uint64_t wr_id) {
  auto qpns = connect_rc_pair(a, b, transport, send_queue_depth, send_queue_depth);
  for (std::uint32_t r = 0; r < send_queue_depth; ++r) {
    post_arrival_receive(a, qpns.first, wr_id);
    post_arrival_receive(b, qpns.second, wr_id);
  }
  return qpns;
}

}  // namespace uroce::sim
