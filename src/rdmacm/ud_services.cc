// UD services over rdma_cm: SIDR_REQ out of rdma_connect, CONNECT_REQUEST
// and the SIDR_REP of rdma_accept on the listener's side, ESTABLISHED or
// UNREACHABLE back on the requester's.
#include "rdmacm/ud_services.h"

#include <cerrno>
#include <cstring>

#include "uroce/monotonic_clock.h"

namespace uroce::rdmacm {
namespace {

// What the program's private data may take: a SIDR_REQ's after rdma_cm's header, a SIDR_REP's.
constexpr std::size_t kRequestUserData = sizeof(cm::SidrRequest::private_data) - cm::CmaHeader::kLength;
constexpr std::size_t kReplyUserData = sizeof(cm::SidrReply::private_data);

int fail(int error) {
  errno = error;
  return -1;
}

bool private_data_fits(const rdma_conn_param& param, std::size_t limit) {
  return param.private_data_len <= limit && (param.private_data_len == 0 || param.private_data != nullptr);
}

}  // namespace

int resolve_ud_service(CmId& id, const rdma_conn_param& param) {
  if (!private_data_fits(param, kRequestUserData)) return fail(EINVAL);
  cm::SidrRequest request;
  request.service_id = cm::service_id(static_cast<cm::PortSpace>(id.id.ps), destination_port(id));
  cm::CmaHeader header;
  header.ip_version = id.id.route.addr.src_addr.sa_family == AF_INET6 ? 6 : 4;
  header.source_port = source_port(id);
  header.source = header_address(id.id.route.addr.src_addr);
  header.destination = header_address(id.id.route.addr.dst_addr);
  header.emit(request.private_data);
  if (param.private_data_len != 0) {
    std::memcpy(request.private_data.data() + cm::CmaHeader::kLength, param.private_data, param.private_data_len);
  }
  id.param = param;
  cm::Gid peer{};
  std::memcpy(peer.data(), id.id.route.addr.addr.ibaddr.dgid.raw, 16);
  CmService& service = *id.service;
  id.comm_id = service.manager().resolve(peer, request, monotonic_now());
  service.ids.emplace(id.comm_id, &id);
  id.state = IdState::connecting;
  service.flush();
  return 0;
}

void on_resolution_reply(CmId& id, const cm::SidrReply& reply) {
  // As Linux's rdma_cm: a refusal is UNREACHABLE with the SIDR status; a
  // Q_Key other than the port space's, UNREACHABLE with EINVAL.
  if (reply.status != cm::SidrStatus::valid) {
    id.state = IdState::disconnected;
    queue_event(id, RDMA_CM_EVENT_UNREACHABLE, static_cast<int>(reply.status), reply.private_data);
    return;
  }
  if (reply.qkey != RDMA_UDP_QKEY) {
    id.state = IdState::disconnected;
    queue_event(id, RDMA_CM_EVENT_UNREACHABLE, -EINVAL);
    return;
  }
  id.state = IdState::connected;
  id.remote_qpn = reply.qpn;
  rdma_cm_event* queued = queue_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, reply.private_data);
  if (queued == nullptr) return;
  rdma_ud_param& ud = queued->param.ud;
  ud.qp_num = reply.qpn;
  ud.qkey = reply.qkey;
  ud.ah_attr = ibv_ah_attr{};
  ud.ah_attr.is_global = 1;
  ud.ah_attr.grh.dgid = id.id.route.addr.addr.ibaddr.dgid;
  ud.ah_attr.grh.sgid_index = 1;
  ud.ah_attr.grh.hop_limit = 64;
  ud.ah_attr.port_num = 1;
}

void on_resolution_request(CmService& service, CmId& listener, const cm::CmEvent& event) {
  const auto& request = std::get<cm::SidrRequest>(*event.message);
  auto header = cm::CmaHeader::parse(request.private_data);
  CmId* child = header ? make_child(service, listener, event, *header) : nullptr;
  if (child == nullptr) {
    service.manager().reject(event.comm_id, 0, {}, monotonic_now());
    return;
  }
  child->request.service_id = request.service_id;
  ByteSpan user_data(request.private_data.data() + cm::CmaHeader::kLength, kRequestUserData);
  queue_event(*child, RDMA_CM_EVENT_CONNECT_REQUEST, 0, user_data, &listener);
}

int accept_ud_request(CmId& id, const rdma_conn_param* param) {
  rdma_conn_param none{};
  const rdma_conn_param& asked = param != nullptr ? *param : none;
  if (!private_data_fits(asked, kReplyUserData)) return fail(EINVAL);
  if (id.id.qp == nullptr && param == nullptr) return fail(EINVAL);  // no QP to name
  cm::SidrReply reply;
  reply.status = cm::SidrStatus::valid;
  reply.qpn = id.id.qp != nullptr ? id.id.qp->qp_num : asked.qp_num;
  reply.qkey = RDMA_UDP_QKEY;
  reply.service_id = id.request.service_id;
  if (asked.private_data_len != 0) std::memcpy(reply.private_data.data(), asked.private_data, asked.private_data_len);
  CmService& service = *id.service;
  if (!service.manager().answer(id.comm_id, reply, monotonic_now())) return fail(EINVAL);
  id.state = IdState::connected;
  service.flush();
  return 0;
}

}  // namespace uroce::rdmacm
