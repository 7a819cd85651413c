// UD services over rdma_cm (RDMA_PS_UDP, RDMA_PS_IPOIB): no connection, only
// service ID resolution (SIDR). rdma_connect sends a SIDR_REQ; the listener
// gets CONNECT_REQUEST, and rdma_accept answers with its QP number and
// Q_Key (rdma_reject: status "rejected"); the requester gets ESTABLISHED
// with the address handle, QP number and Q_Key to send to (param.ud), or
// UNREACHABLE (a refusal, a wrong Q_Key, or no answer).
#pragma once

#include <rdma/rdma_cma.h>

#include "cm/cma_header.h"
#include "rdmacm/cm_service.h"

namespace uroce::rdmacm {

int resolve_ud_service(CmId& id, const rdma_conn_param& param);
int accept_ud_request(CmId& id, const rdma_conn_param* param);
void on_resolution_request(CmService& service, CmId& listener, const cm::CmEvent& event);
void on_resolution_reply(CmId& id, const cm::SidrReply& reply);

// Shared with connections.cc.
// rdma_cm's header addresses: IPv4 after 12 zero bytes, IPv6 as is.
cm::Gid header_address(const sockaddr& address);
void socket_address(const cm::Gid& address, int ip_version, std::uint16_t port, sockaddr_storage& out);
// The passive side's ID for a request to listener (REQ or SIDR_REQ), in the
// service's table; nullptr when out of memory.
CmId* make_child(CmService& service, CmId& listener, const cm::CmEvent& event, const cm::CmaHeader& header);

}  // namespace uroce::rdmacm
