// CM IDs and their addresses: rdma_create_id, rdma_destroy_id,
// rdma_bind_addr, rdma_resolve_addr, rdma_resolve_route, rdma_listen,
// rdma_migrate_id, the port getters and rdma_get_devices. Address
// resolution is immediate: a uroce device is an IP address, and the
// destination is reached over IP, so the events are queued at once.
#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <random>

#include "cm/cma_header.h"
#include "uroce/monotonic_clock.h"
#include "rdmacm/cm_service.h"

namespace uroce::rdmacm {
namespace {

int fail(int error) {
  errno = error;
  return -1;
}

std::size_t length_of(const sockaddr* address) {
  return address->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

void set_port(sockaddr* address, std::uint16_t port) {
  if (address->sa_family == AF_INET) reinterpret_cast<sockaddr_in*>(address)->sin_port = htons(port);
  if (address->sa_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(address)->sin6_port = htons(port);
}

std::uint16_t port_of(const sockaddr* address) {
  if (address->sa_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(address)->sin_port);
  if (address->sa_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(address)->sin6_port);
  return 0;
}

// A resolved ID's source is the device's address, as the kernel's route
// lookup gives it: the peer's rdma_cm checks the address in the REQ's
// header against its routes (Linux rejects 0.0.0.0 with EHOSTUNREACH).
void fill_wildcard_source(CmId& id) {
  sockaddr& source = id.id.route.addr.src_addr;
  const Gid& device = id.service->gid();
  if (source.sa_family == AF_INET) {
    auto& v4 = reinterpret_cast<sockaddr_in&>(source);
    if (v4.sin_addr.s_addr == htonl(INADDR_ANY)) std::memcpy(&v4.sin_addr, device.data() + 12, 4);
  } else if (source.sa_family == AF_INET6) {
    auto& v6 = reinterpret_cast<sockaddr_in6&>(source);
    if (IN6_IS_ADDR_UNSPECIFIED(&v6.sin6_addr)) std::memcpy(&v6.sin6_addr, device.data(), 16);
  }
}

bool is_loopback(const sockaddr* address) {
  if (address->sa_family == AF_INET) {
    return (ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr) >> 24) == 127;
  }
  return address->sa_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
}

// Binds id to the device of address, with an ephemeral port when it names none.
// A loopback address that no device holds binds to the first device, as
// Linux binds it to the first RDMA device (libfabric's verbs provider binds
// "localhost" so); the ID's address is then that device's, where peers reach it.
int bind_locked(CmId& id, const sockaddr* address) {
  if (address->sa_family != AF_INET && address->sa_family != AF_INET6) return fail(EAFNOSUPPORT);
  sockaddr_storage bound{};
  std::memcpy(&bound, address, length_of(address));
  CmService* service = CmService::for_address(address);
  if (service == nullptr && errno == ENODEV && is_loopback(address)) {
    sockaddr_storage any{};
    any.ss_family = address->sa_family;
    service = CmService::for_address(reinterpret_cast<sockaddr*>(&any));
    if (service != nullptr) {
      std::uint16_t port = port_of(address);
      std::memcpy(&bound, &any, sizeof any);
      set_port(reinterpret_cast<sockaddr*>(&bound), port);
    }
  }
  if (service == nullptr) return -1;
  id.service = service;
  id.id.verbs = service->context();
  // As Linux's librdmacm: an ID bound to a device gets its per-device PD
  // (pyverbs builds its AHs and external QPs on it).
  if (id.id.pd == nullptr) id.id.pd = service->default_pd();
  id.id.port_num = 1;
  std::memcpy(&id.id.route.addr.src_storage, &bound, length_of(address));
  if (is_loopback(address)) fill_wildcard_source(id);
  if (port_of(address) == 0) {
    std::uint16_t ephemeral = static_cast<std::uint16_t>(32768 + std::random_device{}() % 28000);
    set_port(&id.id.route.addr.src_addr, ephemeral);
  }
  std::memcpy(id.id.route.addr.addr.ibaddr.sgid.raw, service->gid().data(), 16);
  id.state = IdState::bound;
  return 0;
}

}  // namespace
}  // namespace uroce::rdmacm

using namespace uroce::rdmacm;
using uroce::ByteSpan;

extern "C" {

int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps) {
  if (id == nullptr) return fail(EINVAL);
  if (ps != RDMA_PS_TCP && ps != RDMA_PS_UDP && ps != RDMA_PS_IB && ps != RDMA_PS_IPOIB) return fail(EINVAL);
  auto* created = new (std::nothrow) CmId;
  if (created == nullptr) return fail(ENOMEM);
  created->channel = channel != nullptr ? channel_of(channel) : nullptr;
  created->id.channel = channel;
  created->id.context = context;
  created->id.ps = ps;
  created->id.qp_type = ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB ? IBV_QPT_UD : IBV_QPT_RC;
  created->id.route.path_rec = &created->path;
  *id = &created->id;
  return 0;
}

// As with rdma-core, it waits until the program has acked every event of
// the ID it took.
int rdma_destroy_id(rdma_cm_id* id) {
  if (id == nullptr) return fail(EINVAL);
  std::unique_lock lock(cm_lock());
  CmId* owned = cm_id_of(id);
  events_acked().wait(lock, [owned] { return owned->events_taken == 0; });
  leave_all_groups(*owned);
  if (CmService* service = owned->service) {
    // The peer hears of it as from a program that ends its connection:
    // a DREQ for a connection (its answer finds no ID), a REJ for a request
    // or reply not yet answered; a REQ still unanswered is forgotten.
    uroce::cm::ConnectionManager& manager = service->manager();
    uroce::TimeNs now = uroce::monotonic_now();
    auto consumer = static_cast<std::uint16_t>(uroce::cm::RejectReason::consumer_reject);
    switch (owned->state) {
      case IdState::connected:
      case IdState::accepting: manager.disconnect(owned->comm_id, now); break;
      case IdState::request_pending: manager.reject(owned->comm_id, consumer, {}, now); break;
      case IdState::connecting:
        if (!manager.reject(owned->comm_id, consumer, {}, now)) manager.forget(owned->comm_id);
        break;
      default: break;
    }
    if (owned->comm_id != 0) service->ids.erase(owned->comm_id);
    for (auto it = service->listeners.begin(); it != service->listeners.end();) {
      if (it->second != owned) {
        ++it;
        continue;
      }
      manager.stop_listening(it->first);
      it = service->listeners.erase(it);
    }
    if (owned->reserved_service != 0) manager.release(owned->reserved_service);
    service->flush();
  }
  if (owned->channel != nullptr && owned->channel->events != nullptr) {  // events still queued for it go with it
    auto& queue = owned->channel->events->records;
    for (auto it = queue.begin(); it != queue.end();) {
      if ((*it)->event.id == id) {
        delete *it;
        it = queue.erase(it);
      } else {
        ++it;
      }
    }
  }
  if (id->event != nullptr) delete reinterpret_cast<CmEventRecord*>(id->event);  // rdma_get_request's
  delete owned;
  return 0;
}

int rdma_bind_addr(rdma_cm_id* id, sockaddr* address) {
  if (id == nullptr || address == nullptr) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  if (owned->state != IdState::idle) return fail(EINVAL);
  if (bind_locked(*owned, address) != 0) return -1;
  if (owned->id.ps == RDMA_PS_TCP || owned->id.ps == RDMA_PS_IB) {
    auto space = static_cast<uroce::cm::PortSpace>(owned->id.ps);
    owned->reserved_service = uroce::cm::service_id(space, source_port(*owned));
    owned->service->manager().reserve(owned->reserved_service);
  }
  return 0;
}

static int rdma_resolve_addr_async(rdma_cm_id* id, sockaddr* source, sockaddr* destination, int /*timeout_ms*/) {
  if (id == nullptr || destination == nullptr) return fail(EINVAL);
  if (destination->sa_family != AF_INET && destination->sa_family != AF_INET6) return fail(EAFNOSUPPORT);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  if (owned->state == IdState::idle) {
    // No source: the first device (a uroce device is one address, and it
    // reaches any destination over IP).
    sockaddr_storage any{};
    any.ss_family = destination->sa_family;
    const sockaddr* from = source != nullptr ? source : reinterpret_cast<sockaddr*>(&any);
    if (bind_locked(*owned, from) != 0) return -1;
  } else if (owned->state != IdState::bound) {
    return fail(EINVAL);
  }
  fill_wildcard_source(*owned);
  std::memcpy(&owned->id.route.addr.dst_storage, destination, length_of(destination));
  std::memcpy(owned->id.route.addr.addr.ibaddr.dgid.raw, gid_of(destination)->data(), 16);
  owned->state = IdState::addr_resolved;
  queue_event(*owned, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
  return 0;
}

static int rdma_resolve_route_async(rdma_cm_id* id, int /*timeout_ms*/) {
  if (id == nullptr) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  if (owned->state != IdState::addr_resolved) return fail(EINVAL);
  ibv_sa_path_rec& path = owned->path;
  path.sgid = owned->id.route.addr.addr.ibaddr.sgid;
  path.dgid = owned->id.route.addr.addr.ibaddr.dgid;
  path.pkey = htons(0xFFFF);
  path.mtu = static_cast<std::uint8_t>(owned->service->active_mtu());
  path.hop_limit = 64;
  path.reversible = 1;
  path.numb_path = 1;
  owned->id.route.num_paths = 1;
  owned->state = IdState::route_resolved;
  queue_event(*owned, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
  return 0;
}

// The Local ACK Timeout is kept for the ID's QP (its RTS); the options that
// only tune a connection on a NIC are accepted and ignored; the rest are
// refused (ENOSYS).
int rdma_set_option(rdma_cm_id* id, int level, int name, void* value, size_t length) {
  if (id == nullptr || (value == nullptr && length != 0)) return fail(EINVAL);
  if (level == RDMA_OPTION_ID && name == RDMA_OPTION_ID_ACK_TIMEOUT) {
    if (length != sizeof(std::uint8_t)) return fail(EINVAL);
    std::lock_guard lock(cm_lock());
    cm_id_of(id)->ack_timeout = *static_cast<const std::uint8_t*>(value);
    return 0;
  }
  bool tuning = (level == RDMA_OPTION_ID && (name == RDMA_OPTION_ID_TOS || name == RDMA_OPTION_ID_REUSEADDR ||
                                              name == RDMA_OPTION_ID_AFONLY)) ||
                (level == RDMA_OPTION_IB && name == RDMA_OPTION_IB_PATH);
  return tuning ? 0 : fail(ENOSYS);
}

int rdma_listen(rdma_cm_id* id, int /*backlog*/) {
  if (id == nullptr) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  if (owned->state != IdState::bound) return fail(EINVAL);
  auto space = static_cast<uroce::cm::PortSpace>(owned->id.ps);
  std::uint64_t service_id = uroce::cm::service_id(space, source_port(*owned));
  if (owned->service->listeners.contains(service_id)) return fail(EADDRINUSE);
  owned->service->listeners.emplace(service_id, owned);
  owned->service->manager().listen(service_id);
  owned->service->flush();  // REQs that waited for this listener go out now
  owned->state = IdState::listening;
  return 0;
}

int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
  if (id == nullptr) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  CmChannel* to = channel != nullptr ? channel_of(channel) : nullptr;
  if (to != nullptr && to->events == nullptr) return fail(EBADF);  // a channel destroyed long ago
  if (owned->channel != nullptr && owned->channel->events != nullptr && to != nullptr) {  // its queued events move along
    auto& from_queue = owned->channel->events->records;
    for (auto it = from_queue.begin(); it != from_queue.end();) {
      if ((*it)->event.id == id) {
        to->events->records.push_back(*it);
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t written = ::write(to->events->fd, &one, sizeof one);
        it = from_queue.erase(it);
      } else {
        ++it;
      }
    }
  }
  owned->channel = to;
  owned->id.channel = channel;
  return 0;
}

__be16 rdma_get_src_port(rdma_cm_id* id) { return id != nullptr ? htons(source_port(*cm_id_of(id))) : 0; }
__be16 rdma_get_dst_port(rdma_cm_id* id) { return id != nullptr ? htons(destination_port(*cm_id_of(id))) : 0; }

ibv_context** rdma_get_devices(int* count) {
  std::lock_guard lock(cm_lock());
  std::vector<ibv_context*> contexts = CmService::all_contexts();
  auto* list = new (std::nothrow) ibv_context*[contexts.size() + 1];
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  std::copy(contexts.begin(), contexts.end(), list);
  list[contexts.size()] = nullptr;
  if (count != nullptr) *count = static_cast<int>(contexts.size());
  return list;
}

void rdma_free_devices(ibv_context** list) { delete[] list; }

int rdma_resolve_addr(rdma_cm_id* id, sockaddr* source, sockaddr* destination, int) {
  int result = rdma_resolve_addr_async(id, source, destination, 0);
  return result == 0 ? complete_if_synchronous(id, RDMA_CM_EVENT_ADDR_RESOLVED) : result;
}

int rdma_resolve_route(rdma_cm_id* id, int) {
  int result = rdma_resolve_route_async(id, 0);
  return result == 0 ? complete_if_synchronous(id, RDMA_CM_EVENT_ROUTE_RESOLVED) : result;
}

}  // extern "C"
