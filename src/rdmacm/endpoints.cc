// The helpers of rdma_verbs.h's world: rdma_getaddrinfo (numeric or named
// hosts and services through the C library's resolver), rdma_create_ep and
// rdma_destroy_ep (an ID whose calls wait for their own events),
// rdma_get_request, and the SRQ helpers.
#include <netdb.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "rdmacm/cm_service.h"

using namespace uroce::rdmacm;

namespace {

int fail(int error) {
  errno = error;
  return -1;
}

sockaddr* copy_address(const sockaddr* address, socklen_t length) {
  auto* copy = static_cast<sockaddr*>(::calloc(1, sizeof(sockaddr_storage)));
  if (copy != nullptr) std::memcpy(copy, address, length);
  return copy;
}

}  // namespace

extern "C" {

int rdma_getaddrinfo(const char* node, const char* service, const rdma_addrinfo* hints, rdma_addrinfo** result) {
  if (result == nullptr || (node == nullptr && service == nullptr && hints == nullptr)) return fail(EINVAL);
  rdma_addrinfo wanted{};
  if (hints != nullptr) wanted = *hints;
  if (wanted.ai_family != AF_UNSPEC && wanted.ai_family != AF_INET && wanted.ai_family != AF_INET6) {
    return fail(EAFNOSUPPORT);  // AF_IB: uroce has no InfiniBand addresses
  }
  // With neither node nor service, the hints' own addresses are the answer
  // (as with rdma-core; libfabric asks so for the address it bound).
  if (node == nullptr && service == nullptr && wanted.ai_src_addr == nullptr && wanted.ai_dst_addr == nullptr) {
    return fail(EINVAL);
  }
  addrinfo* found = nullptr;
  if (node != nullptr || service != nullptr) {
    addrinfo ask{};
    ask.ai_family = wanted.ai_family;
    ask.ai_socktype = SOCK_STREAM;
    if (wanted.ai_flags & RAI_PASSIVE) ask.ai_flags |= AI_PASSIVE;
    if (wanted.ai_flags & RAI_NUMERICHOST) ask.ai_flags |= AI_NUMERICHOST;
    int resolved = ::getaddrinfo(node, service, &ask, &found);
    if (resolved != 0) return resolved == EAI_SYSTEM ? -1 : fail(ENODEV);
  }
  auto* info = static_cast<rdma_addrinfo*>(::calloc(1, sizeof(rdma_addrinfo)));
  if (info == nullptr) {
    if (found != nullptr) ::freeaddrinfo(found);
    return fail(ENOMEM);
  }
  info->ai_flags = wanted.ai_flags;
  info->ai_qp_type = wanted.ai_qp_type != 0 ? wanted.ai_qp_type : IBV_QPT_RC;
  info->ai_port_space = wanted.ai_port_space != 0 ? wanted.ai_port_space : RDMA_PS_TCP;
  if (found != nullptr) {
    info->ai_family = found->ai_family;
    sockaddr* address = copy_address(found->ai_addr, found->ai_addrlen);
    if (wanted.ai_flags & RAI_PASSIVE) {
      info->ai_src_addr = address;
      info->ai_src_len = found->ai_addrlen;
    } else {
      info->ai_dst_addr = address;
      info->ai_dst_len = found->ai_addrlen;
    }
    ::freeaddrinfo(found);
  } else if (wanted.ai_dst_addr != nullptr) {
    info->ai_family = wanted.ai_dst_addr->sa_family;
    info->ai_dst_addr = copy_address(wanted.ai_dst_addr, wanted.ai_dst_len);
    info->ai_dst_len = wanted.ai_dst_len;
  } else {
    info->ai_family = wanted.ai_src_addr->sa_family;
  }
  if (info->ai_src_addr == nullptr && wanted.ai_src_addr != nullptr) {
    info->ai_src_addr = copy_address(wanted.ai_src_addr, wanted.ai_src_len);
    info->ai_src_len = wanted.ai_src_len;
  }
  *result = info;
  return 0;
}

void rdma_freeaddrinfo(rdma_addrinfo* info) {
  while (info != nullptr) {
    rdma_addrinfo* next = info->ai_next;
    ::free(info->ai_src_addr);
    ::free(info->ai_dst_addr);
    ::free(info->ai_src_canonname);
    ::free(info->ai_dst_canonname);
    ::free(info->ai_route);
    ::free(info->ai_connect);
    ::free(info);
    info = next;
  }
}

int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* info, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  if (id == nullptr || info == nullptr) return fail(EINVAL);
  rdma_event_channel* channel = rdma_create_event_channel();
  if (channel == nullptr) return -1;
  rdma_cm_id* created = nullptr;
  if (rdma_create_id(channel, &created, nullptr, static_cast<rdma_port_space>(info->ai_port_space)) != 0) {
    int error = errno;
    rdma_destroy_event_channel(channel);
    return fail(error);
  }
  {
    std::lock_guard lock(cm_lock());
    cm_id_of(created)->synchronous = true;
  }
  int result = 0;
  if (info->ai_flags & RAI_PASSIVE) {
    result = info->ai_src_addr != nullptr ? rdma_bind_addr(created, info->ai_src_addr) : fail(EINVAL);
  } else {
    result = rdma_resolve_addr(created, info->ai_src_addr, info->ai_dst_addr, 2000);
    if (result == 0) result = rdma_resolve_route(created, 2000);
  }
  if (result == 0 && qp_init_attr != nullptr) {
    if (info->ai_flags & RAI_PASSIVE) {  // each request's ID gets a QP like it (rdma_get_request)
      std::lock_guard lock(cm_lock());
      cm_id_of(created)->qp_template = *qp_init_attr;
      created->pd = pd;
    } else {
      result = rdma_create_qp(created, pd, qp_init_attr);
    }
  }
  if (result != 0) {
    int error = errno;
    rdma_destroy_ep(created);
    return fail(error);
  }
  *id = created;
  return 0;
}

void rdma_destroy_ep(rdma_cm_id* id) {
  if (id == nullptr) return;
  if (id->qp != nullptr) rdma_destroy_qp(id);
  rdma_event_channel* channel = id->channel;
  bool synchronous;
  {
    std::lock_guard lock(cm_lock());
    synchronous = cm_id_of(id)->synchronous;
  }
  rdma_destroy_id(id);
  if (synchronous && channel != nullptr) rdma_destroy_event_channel(channel);
}

// A synchronous listener's next connection request; the new ID gets a
// channel of its own, so that its calls wait only for its own events.
int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
  if (listen == nullptr || id == nullptr) return fail(EINVAL);
  {
    std::lock_guard lock(cm_lock());
    if (!cm_id_of(listen)->synchronous) return fail(EINVAL);
  }
  rdma_cm_event* event = nullptr;
  while (true) {
    if (rdma_get_cm_event(listen->channel, &event) != 0) return -1;
    if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST) break;
    rdma_ack_cm_event(event);
  }
  rdma_cm_id* request = event->id;
  rdma_event_channel* own = rdma_create_event_channel();
  if (own == nullptr || rdma_migrate_id(request, own) != 0) {
    rdma_ack_cm_event(event);
    return -1;
  }
  std::optional<ibv_qp_init_attr> attr;
  {
    std::lock_guard lock(cm_lock());
    cm_id_of(request)->synchronous = true;
    request->event = event;  // held for the program until the ID goes, as rdma-core does
    --cm_id_of(request)->events_taken;  // the ID owns it now
    attr = cm_id_of(listen)->qp_template;
  }
  if (attr && rdma_create_qp(request, listen->pd, &*attr) != 0) {
    int error = errno;
    rdma_reject(request, nullptr, 0);
    rdma_destroy_id(request);
    return fail(error);
  }
  *id = request;
  return 0;
}

int rdma_create_srq_ex(rdma_cm_id* id, ibv_srq_init_attr_ex* attr) {
  if (id == nullptr || attr == nullptr || id->pd == nullptr) return fail(EINVAL);
  ibv_srq_init_attr classic{};
  classic.srq_context = attr->srq_context;
  classic.attr = attr->attr;
  ibv_srq* srq = ibv_create_srq(id->pd, &classic);
  if (srq == nullptr) return -1;
  id->srq = srq;
  return 0;
}

int rdma_create_srq(rdma_cm_id* id, ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (id == nullptr || attr == nullptr) return fail(EINVAL);
  if (pd != nullptr) id->pd = pd;
  if (id->pd == nullptr) return fail(EINVAL);
  ibv_srq* srq = ibv_create_srq(id->pd, attr);
  if (srq == nullptr) return -1;
  id->srq = srq;
  return 0;
}

int rdma_destroy_srq(rdma_cm_id* id) {
  if (id == nullptr || id->srq == nullptr) return fail(EINVAL);
  int result = ibv_destroy_srq(id->srq);
  if (result == 0) id->srq = nullptr;
  return result;
}

}  // extern "C"
