// QP pair setup for simulated flows.
#include "sim/qp_setup.h"

#include <stdexcept>

namespace uroce::sim {

namespace {

std::uint32_t create_qp(HostNode& host, std::uint32_t peer, const TransportSpec& transport,
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
  init.congestion_controlled = !host.same_server(peer);  // NVLink has flow control of its own
  auto qpn = host.engine().create_qp(init);
  if (!qpn) throw std::runtime_error("simulated host " + std::to_string(host.id()) + ": create_qp refused");
  return *qpn;
}

void bring_up(HostNode& host, std::uint32_t qpn, std::uint32_t peer, std::uint32_t peer_qpn,
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
  attr.ah_attr.dgid = gid_from_ipv4(host_address(peer));
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

std::uint32_t QpConnections::add(std::uint32_t host_a, std::uint32_t host_b, std::uint32_t send_queue_depth,
                                 std::uint32_t receive_queue_depth, std::optional<std::uint64_t> arrival_wr_id,
                                 std::optional<std::uint8_t> data_dscp) {
  if (arrival_wr_id) receive_queue_depth = send_queue_depth;
  PendingPair pair{{host_a, host_b}, arrival_wr_id ? send_queue_depth : 0, arrival_wr_id.value_or(0),
                   data_dscp.value_or(transport_.data_dscp)};
  for (int end = 0; end < 2; ++end) {
    std::uint32_t host = pair.hosts[end];
    qpns_.push_back(fabric_.holds(NodeRef{true, host})
                        ? create_qp(fabric_.host(host), pair.hosts[1 - end], transport_, send_queue_depth,
                                    receive_queue_depth)
                        : 0);
  }
  pairs_.push_back(pair);
  return static_cast<std::uint32_t>(pairs_.size() - 1);
}

void QpConnections::connect(RankGroup& ranks) {
  ranks.sum(qpns_);  // each QPN comes from the one rank that holds its host
  for (std::size_t p = 0; p < pairs_.size(); ++p) {
    const PendingPair& pair = pairs_[p];
    for (int end = 0; end < 2; ++end) {
      std::uint32_t host = pair.hosts[end];
      if (!fabric_.holds(NodeRef{true, host})) continue;
      auto qpn = static_cast<std::uint32_t>(qpns_[2 * p + end]);
      HostNode& node = fabric_.host(host);
      TransportSpec transport = transport_;
      transport.data_dscp = pair.data_dscp;
      bring_up(node, qpn, pair.hosts[1 - end], static_cast<std::uint32_t>(qpns_[2 * p + 1 - end]), transport);
      for (std::uint32_t r = 0; r < pair.arrival_receives; ++r) post_arrival_receive(node, qpn, pair.arrival_wr_id);
    }
  }
}

void post_arrival_receive(HostNode& host, std::uint32_t qpn, std::uint64_t wr_id) {
  RecvWr receive;
  receive.wr_id = wr_id;
  if (host.engine().post_recv(qpn, receive) != std::errc{}) {
    throw std::runtime_error("simulated host " + std::to_string(host.id()) + ": post_recv refused");
  }
}

}  // namespace uroce::sim
