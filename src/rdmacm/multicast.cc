// rdma_join_multicast(_ex) and rdma_leave_multicast on RoCEv2: an IPv4
// group is the GID ::ffff:a.b.c.d (IPv6 groups as they are), every member
// uses the UDP port space's Q_Key, and there is no subnet manager to ask,
// so the join completes at once: MULTICAST_JOIN carries the address handle
// attributes, QPN 0xFFFFFF and Q_Key to send to the group with, and the
// program's context. As with rdma-core, the ID's QP is attached to the group
// when the program takes that event, and detached when it leaves.
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "rdmacm/cm_objects.h"
#include "rdmacm/cm_service.h"

namespace uroce::rdmacm {
namespace {

int fail(int error) {
  errno = error;
  return -1;
}

MulticastMembership* membership_of(CmId& id, const cm::Gid& group) {
  auto found = std::find_if(id.multicast.begin(), id.multicast.end(),
                            [&](const MulticastMembership& m) { return m.group == group; });
  return found == id.multicast.end() ? nullptr : &*found;
}

void detach(CmId& id, MulticastMembership& membership) {
  if (!membership.attached || id.id.qp == nullptr) return;
  ibv_gid gid;
  std::memcpy(gid.raw, membership.group.data(), sizeof gid.raw);
  ibv_detach_mcast(id.id.qp, &gid, 0);
  membership.attached = false;
}

}  // namespace

void on_join_taken(CmId& id, rdma_cm_event& event) {
  cm::Gid group;
  std::memcpy(group.data(), event.param.ud.ah_attr.grh.dgid.raw, group.size());
  MulticastMembership* membership = membership_of(id, group);
  if (membership == nullptr || membership->send_only || membership->attached || id.id.qp == nullptr) return;
  int error = ibv_attach_mcast(id.id.qp, &event.param.ud.ah_attr.grh.dgid, 0);
  if (error != 0) {
    event.event = RDMA_CM_EVENT_MULTICAST_ERROR;
    event.status = -error;
    return;
  }
  membership->attached = true;
}

void leave_all_groups(CmId& id) {
  for (MulticastMembership& membership : id.multicast) detach(id, membership);
  id.multicast.clear();
}

}  // namespace uroce::rdmacm

using namespace uroce::rdmacm;

extern "C" {

int rdma_join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex* attr, void* context) {
  if (id == nullptr || attr == nullptr || !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
      attr->addr == nullptr || !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
      (attr->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER && attr->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)) {
    return fail(EINVAL);
  }
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  // As Linux's rdma_cm: the ID must have its device (bound, or its address resolved).
  if (owned->service == nullptr || (owned->state != IdState::bound && owned->state != IdState::addr_resolved &&
                                    owned->state != IdState::route_resolved)) {
    return fail(EINVAL);
  }
  std::optional<uroce::cm::Gid> group = gid_of(attr->addr);
  if (!group || !uroce::gid_is_multicast(*group)) return fail(EINVAL);  // not a multicast address
  if (membership_of(*owned, *group) != nullptr) return fail(EADDRINUSE);
  MulticastMembership& membership = owned->multicast.emplace_back();
  membership.group = *group;
  membership.send_only = attr->join_flags == RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
  membership.context = context;
  rdma_cm_event* queued = queue_event(*owned, RDMA_CM_EVENT_MULTICAST_JOIN, 0);
  if (queued == nullptr) return 0;  // an ID without a channel hears of nothing
  rdma_ud_param& ud = queued->param.ud;
  ud.private_data = context;
  ud.private_data_len = 0;
  ud.qp_num = 0xFFFFFF;  // every multicast datagram's destination QP
  ud.qkey = RDMA_UDP_QKEY;
  ud.ah_attr = ibv_ah_attr{};
  ud.ah_attr.is_global = 1;
  std::memcpy(ud.ah_attr.grh.dgid.raw, group->data(), group->size());
  ud.ah_attr.grh.sgid_index = 1;  // the device's own address
  ud.ah_attr.grh.hop_limit = 64;
  ud.ah_attr.port_num = 1;
  return 0;
}

int rdma_join_multicast(rdma_cm_id* id, sockaddr* address, void* context) {
  rdma_cm_join_mc_attr_ex attr{};
  attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
  attr.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
  attr.addr = address;
  return rdma_join_multicast_ex(id, &attr, context);
}

int rdma_leave_multicast(rdma_cm_id* id, sockaddr* address) {
  if (id == nullptr || address == nullptr) return fail(EINVAL);
  std::lock_guard lock(cm_lock());
  CmId* owned = cm_id_of(id);
  std::optional<uroce::cm::Gid> group = gid_of(address);
  MulticastMembership* membership = group ? membership_of(*owned, *group) : nullptr;
  if (membership == nullptr) return fail(EADDRNOTAVAIL);
  detach(*owned, *membership);
  owned->multicast.erase(owned->multicast.begin() + (membership - owned->multicast.data()));
  return 0;
}

}  // extern "C"
