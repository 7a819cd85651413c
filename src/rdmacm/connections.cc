// Connections: rdma_create_qp (the QP waits in INIT), rdma_connect (REQ),
// rdma_accept (the QP to RTS, REP), rdma_reject, rdma_disconnect (the QP to
// ERR, DREQ), rdma_establish, rdma_init_qp_attr, rdma_notify; and what the
// service hands over: a REQ for a listener, then each connection's REP,
// RTU, REJ, DREQ/DREP or timeout, as rdma_cm events. The program's QP is
// moved only in the program's own threads (its calls, and on_event_taken
// as it takes an event): it may destroy the QP at any time.
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "cm/cma_header.h"
#include "uroce/monotonic_clock.h"
#include "ibverbs/uroce_private.h"
#include "rdmacm/cm_service.h"
#include "rdmacm/ud_services.h"

namespace uroce::rdmacm {
namespace {

constexpr std::uint8_t kLocalAckTimeout = 14;  // 4.096 us * 2^14 = 67 ms
constexpr std::uint8_t kMinRnrTimer = 12;      // 0.64 ms
// What the program's private data may take: a REQ's after rdma_cm's header (56 bytes), a REP's, a REJ's.
constexpr std::size_t kRequestUserData = sizeof(cm::ConnectRequest::private_data) - cm::CmaHeader::kLength;
constexpr std::size_t kReplyUserData = sizeof(cm::ConnectReply::private_data);
constexpr std::size_t kRejectUserData = sizeof(cm::ConnectReject::private_data);

int fail(int error) {
  errno = error;
  return -1;
}

std::uint32_t random_psn() { return std::random_device{}() & 0xFFFFFF; }

cm::Gid gid_of(const ibv_gid& gid) {
  cm::Gid out{};
  std::memcpy(out.data(), gid.raw, 16);
  return out;
}


// A program's connection parameters as rdma-core reads them: none given,
// or RDMA_MAX_RESP_RES / RDMA_MAX_INIT_DEPTH, ask for as many READs and
// atomics as the device and the peer's offer allow (0xFF: no offer yet);
// none given means 7 retries and 7 RNR retries.
rdma_conn_param effective_param(const rdma_conn_param* given, const CmService& service,
                                std::uint8_t offered_responder_resources, std::uint8_t offered_initiator_depth) {
  rdma_conn_param param{};
  if (given != nullptr) {
    param = *given;
  } else {
    param.retry_count = 7;
    param.rnr_retry_count = 7;
  }
  if (given == nullptr || given->responder_resources == RDMA_MAX_RESP_RES) {
    param.responder_resources = std::min(offered_responder_resources, service.max_responder_resources());
  }
  if (given == nullptr || given->initiator_depth == RDMA_MAX_INIT_DEPTH) {
    param.initiator_depth = std::min(offered_initiator_depth, service.max_initiator_depth());
  }
  return param;
}

ibv_mtu smaller(ibv_mtu a, std::uint8_t b) { return b >= 1 && b < a ? static_cast<ibv_mtu>(b) : a; }

// INIT -> RTR -> RTS for a connected QP of id, toward its peer.
int connect_qp(CmId& id, std::uint32_t remote_qpn, ibv_mtu mtu, std::uint8_t dest_rd_atomic,
               std::uint8_t rd_atomic, std::uint8_t retry, std::uint8_t rnr_retry) {
  ibv_qp* qp = id.id.qp;
  if (qp == nullptr) return 0;  // the program moves its own QP (rdma_init_qp_attr)
  id.local_qpn = qp->qp_num;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = mtu;
  attr.dest_qp_num = remote_qpn;
  attr.rq_psn = id.own_psn;
  attr.max_dest_rd_atomic = std::max<std::uint8_t>(dest_rd_atomic, 1);
  attr.min_rnr_timer = kMinRnrTimer;
  attr.ah_attr.is_global = 1;
  attr.ah_attr.grh.dgid = id.id.route.addr.addr.ibaddr.dgid;
  attr.ah_attr.grh.sgid_index = 1;
  attr.ah_attr.grh.hop_limit = 64;
  attr.ah_attr.port_num = 1;
  int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  if (qp->qp_type == IBV_QPT_RC) mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  if (ibv_modify_qp(qp, &attr, mask) != 0) return -1;
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = id.remote_psn;
  attr.timeout = id.ack_timeout.value_or(kLocalAckTimeout);
  attr.retry_cnt = retry & 7;
  attr.rnr_retry = rnr_retry & 7;
  attr.max_rd_atomic = std::max<std::uint8_t>(rd_atomic, 1);
  mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
  if (qp->qp_type == IBV_QPT_RC) mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
  return ibv_modify_qp(qp, &attr, mask);
}

void destroy_completion_queues(rdma_cm_id& id) {
  if (id.send_cq != nullptr) ibv_destroy_cq(id.send_cq);
  if (id.recv_cq != nullptr) ibv_destroy_cq(id.recv_cq);
  if (id.send_cq_channel != nullptr) ibv_destroy_comp_channel(id.send_cq_channel);
  if (id.recv_cq_channel != nullptr) ibv_destroy_comp_channel(id.recv_cq_channel);
  id.send_cq = id.recv_cq = nullptr;
  id.send_cq_channel = id.recv_cq_channel = nullptr;
}

bool make_completion_queues(rdma_cm_id& id, ibv_qp_init_attr& attr) {
  id.send_cq_channel = ibv_create_comp_channel(id.verbs);
  id.recv_cq_channel = ibv_create_comp_channel(id.verbs);
  if (id.send_cq_channel != nullptr && id.recv_cq_channel != nullptr) {
    id.send_cq = ibv_create_cq(id.verbs, static_cast<int>(std::max(attr.cap.max_send_wr, 1u)), &id, id.send_cq_channel, 0);
    id.recv_cq = ibv_create_cq(id.verbs, static_cast<int>(std::max(attr.cap.max_recv_wr, 1u)), &id, id.recv_cq_channel, 0);
  }
  if (id.send_cq == nullptr || id.recv_cq == nullptr) {
    int error = errno;
    destroy_completion_queues(id);
    errno = error;
    return false;
  }
  attr.send_cq = id.send_cq;
  attr.recv_cq = id.recv_cq;
  return true;
}

void qp_to_error(CmId& id) {
  if (id.id.qp == nullptr) return;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ibv_modify_qp(id.id.qp, &attr, IBV_QP_STATE);
}

void fill_conn_event_params(rdma_cm_event& event, std::uint8_t responder_resources, std::uint8_t initiator_depth,
                            std::uint8_t retry, std::uint8_t rnr_retry, bool srq, std::uint32_t qpn) {
  event.param.conn.responder_resources = responder_resources;
  event.param.conn.initiator_depth = initiator_depth;
  event.param.conn.retry_count = retry;
  event.param.conn.rnr_retry_count = rnr_retry;
  event.param.conn.srq = srq;
  event.param.conn.qp_num = qpn;
}

}  // namespace

// rdma_cm's header addresses: IPv4 after 12 zero bytes, IPv6 as is.
cm::Gid header_address(const sockaddr& address) {
  cm::Gid out{};
  if (address.sa_family == AF_INET) {
    std::memcpy(out.data() + 12, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, 4);
  } else if (address.sa_family == AF_INET6) {
    std::memcpy(out.data(), &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, 16);
  }
  return out;
}

void socket_address(const cm::Gid& address, int ip_version, std::uint16_t port, sockaddr_storage& out) {
  std::memset(&out, 0, sizeof out);
  if (ip_version == 4) {
    auto& v4 = reinterpret_cast<sockaddr_in&>(out);
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    std::memcpy(&v4.sin_addr, address.data() + 12, 4);
  } else {
    auto& v6 = reinterpret_cast<sockaddr_in6&>(out);
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
    std::memcpy(&v6.sin6_addr, address.data(), 16);
  }
}

CmId* make_child(CmService& service, CmId& listener, const cm::CmEvent& event, const cm::CmaHeader& header) {
  auto* child = new (std::nothrow) CmId;
  if (child == nullptr) return nullptr;
  child->state = IdState::request_pending;
  child->service = &service;
  child->channel = listener.channel;
  child->comm_id = event.comm_id;
  // Drawn now, not at rdma_accept: a program that moves its own QP asks
  // rdma_init_qp_attr for RTR (its rq_psn) before it accepts.
  child->own_psn = random_psn();
  child->id.verbs = service.context();
  child->id.pd = service.default_pd();
  child->id.channel = listener.id.channel;
  child->id.context = listener.id.context;
  child->id.ps = listener.id.ps;
  child->id.qp_type = listener.id.qp_type;
  child->id.port_num = 1;
  child->id.route.path_rec = &child->path;
  child->id.route.num_paths = 1;
  // Our side is the request's destination; the peer is its source.
  socket_address(header.destination, header.ip_version, source_port(listener), child->id.route.addr.src_storage);
  socket_address(header.source, header.ip_version, header.source_port, child->id.route.addr.dst_storage);
  child->id.route.addr.addr.ibaddr.sgid = listener.id.route.addr.addr.ibaddr.sgid;
  std::memcpy(child->id.route.addr.addr.ibaddr.dgid.raw, event.peer.data(), 16);
  child->path.sgid = child->id.route.addr.addr.ibaddr.sgid;
  child->path.dgid = child->id.route.addr.addr.ibaddr.dgid;
  service.ids.emplace(event.comm_id, child);
  return child;
}

void on_connection_request(CmService& service, CmId& listener, const cm::CmEvent& event) {
  const auto& request = std::get<cm::ConnectRequest>(*event.message);
  auto header = cm::CmaHeader::parse(request.private_data);
  CmId* child = header ? make_child(service, listener, event, *header) : nullptr;
  if (child == nullptr) {
    service.manager().reject(event.comm_id, static_cast<std::uint16_t>(cm::RejectReason::consumer_reject), {}, monotonic_now());
    return;
  }
  child->request = request;
  child->path.mtu = request.path_mtu;
  child->remote_qpn = request.local_qpn;
  child->remote_psn = request.starting_psn;
  child->remote_rnr_retry = request.rnr_retry_count;
  ByteSpan user_data(request.private_data.data() + cm::CmaHeader::kLength, kRequestUserData);
  // From the listener's side: the peer's initiator depth is what we must answer.
  if (rdma_cm_event* queued = queue_event(*child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, user_data, &listener)) {
    fill_conn_event_params(*queued, request.initiator_depth, request.responder_resources, request.retry_count,
                           request.rnr_retry_count, request.srq, request.local_qpn);
  }
}

void on_event_taken(CmId& id, rdma_cm_event& event) {
  if (event.event == RDMA_CM_EVENT_MULTICAST_JOIN) return on_join_taken(id, event);
  if (event.event == RDMA_CM_EVENT_REJECTED || event.event == RDMA_CM_EVENT_UNREACHABLE) {
    qp_to_error(id);
    return;
  }
  if (event.event != RDMA_CM_EVENT_CONNECT_RESPONSE || id.id.qp == nullptr || id.state != IdState::connecting) return;
  CmService& service = *id.service;  // the QP to RTS, then the RTU; the program sees ESTABLISHED
  TimeNs now = monotonic_now();
  int moved = connect_qp(id, id.remote_qpn, smaller(service.active_mtu(), id.request.path_mtu),
                         id.param.responder_resources, std::min(id.param.initiator_depth, id.remote_responder_resources),
                         id.param.retry_count, id.remote_rnr_retry);
  if (moved != 0) {
    event.event = RDMA_CM_EVENT_CONNECT_ERROR;
    event.status = -errno;
    service.manager().reject(id.comm_id, static_cast<std::uint16_t>(cm::RejectReason::no_qp), {}, now);
    id.state = IdState::disconnected;
  } else {
    service.manager().ready(id.comm_id, {}, now);
    id.state = IdState::connected;
    event.event = RDMA_CM_EVENT_ESTABLISHED;
  }
  service.flush();
}

void on_connection_event(CmId& id, const cm::CmEvent& event) {
  switch (event.kind) {
    case cm::CmEventKind::reply: {  // the QP moves when the program takes the event (on_event_taken)
      const auto& reply = std::get<cm::ConnectReply>(*event.message);
      id.remote_qpn = reply.local_qpn;
      id.remote_psn = reply.starting_psn;
      id.remote_rnr_retry = reply.rnr_retry_count;
      id.remote_responder_resources = reply.responder_resources;
      if (rdma_cm_event* queued = queue_event(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, reply.private_data)) {
        fill_conn_event_params(*queued, reply.responder_resources, reply.initiator_depth, 0, reply.rnr_retry_count,
                               reply.srq, reply.local_qpn);
      }
      return;
    }
    case cm::CmEventKind::established:
      id.state = IdState::connected;
      queue_event(id, RDMA_CM_EVENT_ESTABLISHED, 0);
      return;
    case cm::CmEventKind::rejected: {
      const auto& reject = std::get<cm::ConnectReject>(*event.message);
      id.state = IdState::disconnected;
      queue_event(id, RDMA_CM_EVENT_REJECTED, reject.reason, reject.private_data);
      return;
    }
    case cm::CmEventKind::unreachable:
      id.state = IdState::disconnected;
      queue_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
      return;
    case cm::CmEventKind::disconnected:  // the program's rdma_disconnect moves its QP, as with rdma-core
      id.state = IdState::disconnected;
      if (id.local_qpn != 0 && uroce_qp_has_completions_waiting(id.service->context(), id.local_qpn)) {
        id.service->defer_disconnect(id.comm_id);  // after the program polled what came before the DREQ
      } else {
        queue_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
      }
      return;
    case cm::CmEventKind::resolved:
      on_resolution_reply(id, std::get<cm::SidrReply>(*event.message));
      return;
    case cm::CmEventKind::request:
    case cm::CmEventKind::resolution_request: return;  // the service hands these to listeners
  }
}

}  // namespace uroce::rdmacm

using namespace uroce::rdmacm;
using uroce::monotonic_now;
namespace cm = uroce::cm;

extern "C" {

int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* attr) {
  if (id == nullptr || attr == nullptr) return fail(EINVAL);
  ibv_qp_init_attr_ex extended{};
  extended.qp_context = attr->qp_context;
  extended.send_cq = attr->send_cq;
  extended.recv_cq = attr->recv_cq;
  extended.srq = attr->srq;
  extended.cap = attr->cap;
  extended.qp_type = attr->qp_type;
  extended.sq_sig_all = attr->sq_sig_all;
  extended.pd = pd;
  extended.comp_mask = pd != nullptr ? IBV_QP_INIT_ATTR_PD : 0;
  int result = rdma_create_qp_ex(id, &extended);
  if (result == 0) {
    attr->cap = extended.cap;
    attr->send_cq = extended.send_cq;
    attr->recv_cq = extended.recv_cq;
    attr->qp_type = extended.qp_type;
  }
  return result;
}

// Create flags (IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, as mckey -l asks) go to
// the verbs, which refuse those they do not serve.
int rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
  if (id == nullptr || attr == nullptr) return fail(EINVAL);
  if ((attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS)) != 0) return fail(ENOSYS);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  ibv_pd* pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) ? attr->pd : nullptr;
  if (pd == nullptr) pd = id->pd;
  if (pd == nullptr && owned->service != nullptr) pd = owned->service->default_pd();
  if (pd == nullptr || id->verbs == nullptr || pd->context != id->verbs) return fail(EINVAL);
  // Without CQs from the program, each direction gets a CQ with its own
  // completion channel (rdma_verbs.h's rdma_get_send_comp/recv_comp wait on them).
  if (attr->qp_type == 0) attr->qp_type = id->qp_type;  // as rdma-core: the ID's (its port space's) type
  bool make_cqs = attr->send_cq == nullptr || attr->recv_cq == nullptr;
  if (make_cqs) {
    ibv_qp_init_attr cqs{};
    cqs.send_cq = attr->send_cq;
    cqs.recv_cq = attr->recv_cq;
    cqs.cap = attr->cap;
    if (!make_completion_queues(*id, cqs)) return -1;
    attr->send_cq = cqs.send_cq;
    attr->recv_cq = cqs.recv_cq;
  }
  attr->pd = pd;
  attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
  ibv_qp* qp = ibv_create_qp_ex(id->verbs, attr);
  if (qp == nullptr) {
    int error = errno;
    if (make_cqs) destroy_completion_queues(*id);
    return fail(error);
  }
  owned->owns_cqs = make_cqs;
  ibv_qp_attr init{};
  init.qp_state = IBV_QPS_INIT;
  init.port_num = 1;
  int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
  if (attr->qp_type == IBV_QPT_UD) {
    init.qkey = RDMA_UDP_QKEY;
    mask |= IBV_QP_QKEY;
  } else {
    init.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                           (attr->qp_type == IBV_QPT_RC ? IBV_ACCESS_REMOTE_ATOMIC : 0);
    mask |= IBV_QP_ACCESS_FLAGS;
  }
  bool moved = ibv_modify_qp(qp, &init, mask) == 0;
  if (moved && attr->qp_type == IBV_QPT_UD) {  // as rdma-core: a UD QP is ready to send at once
    ibv_qp_attr ready{};
    ready.qp_state = IBV_QPS_RTR;
    moved = ibv_modify_qp(qp, &ready, IBV_QP_STATE) == 0;
    ready.qp_state = IBV_QPS_RTS;
    ready.sq_psn = 0;
    moved = moved && ibv_modify_qp(qp, &ready, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0;
  }
  if (!moved) {
    int error = errno;
    ibv_destroy_qp(qp);
    if (make_cqs) destroy_completion_queues(*id);
    return fail(error);
  }
  id->qp = qp;
  id->pd = pd;
  id->send_cq = attr->send_cq;
  id->recv_cq = attr->recv_cq;
  id->srq = attr->srq;
  id->qp_type = attr->qp_type;
  return 0;
}

void rdma_destroy_qp(rdma_cm_id* id) {
  if (id == nullptr || id->qp == nullptr) return;
  ibv_destroy_qp(id->qp);
  id->qp = nullptr;
  std::lock_guard lock(cm_lock());
  if (cm_id_of(id)->owns_cqs) destroy_completion_queues(*id);
  cm_id_of(id)->owns_cqs = false;
}

static int rdma_connect_async(rdma_cm_id* id, rdma_conn_param* param) {
  if (id == nullptr) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  if (owned->state != IdState::route_resolved) return fail(EINVAL);
  const rdma_conn_param asked = effective_param(param, *owned->service, 0xFF, 0xFF);
  if (id->ps == RDMA_PS_UDP || id->ps == RDMA_PS_IPOIB) return resolve_ud_service(*owned, asked);
  if (asked.private_data_len > kRequestUserData || (asked.private_data_len != 0 && asked.private_data == nullptr)) {
    return fail(EINVAL);
  }
  std::uint32_t qpn = id->qp != nullptr ? id->qp->qp_num : asked.qp_num;
  owned->param = asked;
  owned->own_psn = random_psn();

  cm::ConnectRequest& request = owned->request;
  request = cm::ConnectRequest{};
  request.service_id = cm::service_id(static_cast<cm::PortSpace>(id->ps), destination_port(*owned));
  request.local_qpn = qpn;
  request.responder_resources = asked.responder_resources;
  request.initiator_depth = asked.initiator_depth;
  request.transport = id->qp != nullptr && id->qp->qp_type == IBV_QPT_UC ? cm::TransportType::uc : cm::TransportType::rc;
  request.end_to_end_flow_control = asked.flow_control != 0;
  request.starting_psn = owned->own_psn;
  request.retry_count = asked.retry_count & 7;
  request.rnr_retry_count = asked.rnr_retry_count & 7;
  request.path_mtu = static_cast<std::uint8_t>(owned->service->active_mtu());
  request.srq = id->qp != nullptr ? id->qp->srq != nullptr : asked.srq != 0;
  request.primary.local_gid = gid_of(id->route.addr.addr.ibaddr.sgid);
  request.primary.remote_gid = gid_of(id->route.addr.addr.ibaddr.dgid);
  request.primary.hop_limit = 64;
  request.primary.local_ack_timeout = owned->ack_timeout.value_or(kLocalAckTimeout);
  cm::CmaHeader header;
  header.ip_version = id->route.addr.src_addr.sa_family == AF_INET6 ? 6 : 4;
  header.source_port = source_port(*owned);
  header.source = header_address(id->route.addr.src_addr);
  header.destination = header_address(id->route.addr.dst_addr);
  header.emit(request.private_data);
  if (asked.private_data_len != 0) {
    std::memcpy(request.private_data.data() + cm::CmaHeader::kLength, asked.private_data, asked.private_data_len);
  }
  CmService& service = *owned->service;
  owned->comm_id = service.manager().connect(gid_of(id->route.addr.addr.ibaddr.dgid), request, monotonic_now());
  service.ids.emplace(owned->comm_id, owned);
  owned->state = IdState::connecting;
  service.flush();
  return 0;
}

static int rdma_accept_async(rdma_cm_id* id, rdma_conn_param* param) {
  if (id == nullptr) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  if (owned->state != IdState::request_pending) return fail(EINVAL);
  if (id->ps == RDMA_PS_UDP || id->ps == RDMA_PS_IPOIB) return accept_ud_request(*owned, param);
  // The peer offers its initiator depth to our responder resources, and the reverse.
  const rdma_conn_param asked =
      effective_param(param, *owned->service, owned->request.initiator_depth, owned->request.responder_resources);
  if (asked.private_data_len > kReplyUserData || (asked.private_data_len != 0 && asked.private_data == nullptr)) {
    return fail(EINVAL);
  }
  const cm::ConnectRequest& request = owned->request;
  owned->param = asked;  // own_psn was drawn with the request (make_child)
  CmService& service = *owned->service;
  if (connect_qp(*owned, request.local_qpn, smaller(service.active_mtu(), request.path_mtu),
                 asked.responder_resources, asked.initiator_depth, request.retry_count, request.rnr_retry_count) != 0) {
    return -1;
  }
  cm::ConnectReply reply;
  reply.local_qpn = id->qp != nullptr ? id->qp->qp_num : asked.qp_num;
  reply.starting_psn = owned->own_psn;
  reply.responder_resources = asked.responder_resources;
  reply.initiator_depth = asked.initiator_depth;
  reply.end_to_end_flow_control = asked.flow_control != 0;
  reply.rnr_retry_count = asked.rnr_retry_count & 7;
  reply.srq = id->qp != nullptr ? id->qp->srq != nullptr : asked.srq != 0;
  if (asked.private_data_len != 0) std::memcpy(reply.private_data.data(), asked.private_data, asked.private_data_len);
  if (!service.manager().accept(owned->comm_id, reply, monotonic_now())) return fail(EINVAL);
  owned->state = IdState::accepting;
  service.flush();
  return 0;
}

namespace {

int reject_with(rdma_cm_id* id, const void* private_data, std::uint8_t private_data_len, cm::RejectReason reason) {
  if (id == nullptr || private_data_len > kRejectUserData) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  if (owned->state != IdState::request_pending) return fail(EINVAL);
  uroce::ByteSpan data(static_cast<const std::uint8_t*>(private_data), private_data != nullptr ? private_data_len : 0);
  owned->service->manager().reject(owned->comm_id, static_cast<std::uint16_t>(reason), data, monotonic_now());
  owned->state = IdState::disconnected;
  owned->service->flush();
  return 0;
}

}  // namespace

int rdma_reject(rdma_cm_id* id, const void* private_data, std::uint8_t private_data_len) {
  return reject_with(id, private_data, private_data_len, cm::RejectReason::consumer_reject);
}

// Rejecting a peer's ECE (rdmacm/ece.cc) is a reject with reason 35 (vendor
// option not supported), as Linux's.
int rdma_reject_ece(rdma_cm_id* id, const void* private_data, std::uint8_t private_data_len) {
  return reject_with(id, private_data, private_data_len, cm::RejectReason::vendor_option_not_supported);
}

int rdma_disconnect(rdma_cm_id* id) {
  if (id == nullptr) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  qp_to_error(*owned);
  if (owned->state == IdState::disconnected) return 0;  // the peer's DREQ came first
  if (owned->state != IdState::connected && owned->state != IdState::accepting) return fail(EINVAL);
  owned->service->manager().disconnect(owned->comm_id, monotonic_now());
  owned->state = IdState::disconnected;
  owned->service->flush();
  return 0;
}

int rdma_establish(rdma_cm_id* id) {
  if (id == nullptr) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  if (owned->state != IdState::connecting || !owned->service->manager().ready(owned->comm_id, {}, monotonic_now())) {
    return fail(EINVAL);
  }
  owned->state = IdState::connected;
  owned->service->flush();
  return 0;
}

int rdma_notify(rdma_cm_id* id, ibv_event_type) { return id != nullptr ? 0 : fail(EINVAL); }

// The attributes rdma_cm would give the QP for attr->qp_state (INIT, RTR
// or RTS), for a program that moves its own QP.
int rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* attr, int* mask) {
  if (id == nullptr || attr == nullptr || mask == nullptr) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  ibv_qp_state wanted = attr->qp_state;
  std::memset(attr, 0, sizeof *attr);
  attr->qp_state = wanted;
  bool known_peer = owned->state == IdState::request_pending || owned->state == IdState::connecting ||
                    owned->state == IdState::accepting || owned->state == IdState::connected;
  switch (wanted) {
    case IBV_QPS_INIT:
      if (owned->state == IdState::idle) return fail(EINVAL);
      attr->port_num = 1;
      attr->qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
      *mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
      return 0;
    case IBV_QPS_RTR:
      if (!known_peer) return fail(EINVAL);
      attr->path_mtu = smaller(owned->service->active_mtu(), owned->request.path_mtu);
      attr->dest_qp_num = owned->remote_qpn;
      attr->rq_psn = owned->own_psn;
      attr->max_dest_rd_atomic = std::max<std::uint8_t>(owned->param.responder_resources, 1);
      attr->min_rnr_timer = kMinRnrTimer;
      attr->ah_attr.is_global = 1;
      attr->ah_attr.grh.dgid = id->route.addr.addr.ibaddr.dgid;
      attr->ah_attr.grh.sgid_index = 1;
      attr->ah_attr.grh.hop_limit = 64;
      attr->ah_attr.port_num = 1;
      *mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
              IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
      return 0;
    case IBV_QPS_RTS:
      if (!known_peer) return fail(EINVAL);
      attr->sq_psn = owned->remote_psn;
      attr->timeout = owned->ack_timeout.value_or(kLocalAckTimeout);
      attr->retry_cnt = owned->request.retry_count;
      attr->rnr_retry = owned->remote_rnr_retry;
      attr->max_rd_atomic = std::max<std::uint8_t>(owned->param.initiator_depth, 1);
      *mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
              IBV_QP_MAX_QP_RD_ATOMIC;
      return 0;
    default:
      return fail(EINVAL);
  }
}

int rdma_connect(rdma_cm_id* id, rdma_conn_param* param) {
  int result = rdma_connect_async(id, param);
  return result == 0 ? complete_if_synchronous(id, RDMA_CM_EVENT_ESTABLISHED) : result;
}

int rdma_accept(rdma_cm_id* id, rdma_conn_param* param) {
  int result = rdma_accept_async(id, param);
  return result == 0 ? complete_if_synchronous(id, RDMA_CM_EVENT_ESTABLISHED) : result;
}

}  // extern "C"
